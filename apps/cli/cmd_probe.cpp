// `k3tune probe --target T`: what the runner sees on a target -- VLEN, marchid, the IME2 gate, the
// TCM backend and block states (stale locks), hardware counters, streaming memory bandwidth (the
// membw op), TCM bandwidth (the tcm_bw op) and the compute peaks of the runner's own code (the
// peak op). The bandwidth and peaks are recorded in the database (target_probes) as the measured
// ceilings of the reports' roofline; --no-record leaves the database alone.
#include <unistd.h>

#include <filesystem>
#include <iostream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "apps/cli/app_context.h"
#include "harness/host/store/database.h"
#include "harness/host/store/probes.h"
#include "harness/host/bench/provenance.h"
#include "harness/host/targets/runner_facts.h"

namespace k3cli {

void add_probe_command(CLI::App& app, AppContext& ctx) {
  struct Args {
    std::string target = "local";
    int mib = 64;
    bool no_record = false;
  };
  auto a = std::make_shared<Args>();
  auto* cmd = app.add_subcommand("probe", "run the runner's probes on a target");
  cmd->add_option("--target", a->target, "target name")->capture_default_str();
  cmd->add_option("--mib", a->mib, "membw array size in MiB (several times the last-level cache)")
      ->capture_default_str();
  cmd->add_flag("--no-record", a->no_record,
                "do not record the measured ceilings in the database (target_probes)");
  cmd->callback([&ctx, a] {
    auto t = ctx.target(a->target);
    if (!t->missing().empty())
      throw k3bench::UserError(fmt::format("target {}: missing {}", t->name(), t->missing().front()));
    const double timeout = t->config().timeout_s;
    // What the runner says of itself: machine, the IME2 gate (open, or why not), the TCM backend
    // and every block's hand-off state (stale locks flagged).
    k3targets::RunnerFacts facts;
    try {
      facts = k3targets::read_runner_facts(*t);
    } catch (const k3targets::FactsError& e) {
      throw k3bench::UserError(e.what());
    }
    const auto bw =
        t->run({"--op", "membw", "--shape", fmt::format("mib={}", a->mib), "--params", "mode=read",
                "--reps", "3", "--warmup", "1", "--min-time", "0.05", "--json"},
               k3targets::ProcessOptions::with_timeout(timeout));
    if (!bw.ok())
      throw k3bench::UserError(
          fmt::format("target {}: membw probe failed: {}", t->name(), bw.failure_reason(timeout)));
    const auto j = nlohmann::json::parse(bw.out);
    const std::string ime2_gate =
        facts.ime2_open ? "open (ime2 path taken)" : "closed: " + facts.ime2_reason;
    std::string tcm_line = facts.tcm_backend + " (" + facts.tcm_reason + ")";
    if (!facts.tcm_stale_blocks.empty()) {
      tcm_line += "; STALE locks on blocks " + nlohmann::json(facts.tcm_stale_blocks).dump() +
                  " (recover: k3tune tcm release --target " + t->name() + ")";
    }
    // TCM bandwidth from the pool's workers (pinned on a K3): copy into the worker's block, read it
    // back, and the same read loop over DRAM. On a board this answers whether A100-side TCM reads
    // beat DRAM at all; elsewhere the blocks are ordinary memory and the figures say only that.
    nlohmann::json tcm_bw = nlohmann::json::object();
    for (const char* mode : {"copy_in", "read", "dram_read"}) {
      const auto r = t->run(
          {"--op", "tcm_bw", "--shape", "kib=192", "--params", std::string("mode=") + mode,
           "--reps", "3", "--warmup", "1", "--min-time", "0.05", "--check", "sample", "--json"},
          k3targets::ProcessOptions::with_timeout(timeout));
      tcm_bw[mode] = r.ok() ? nlohmann::json::parse(r.out)["summary"]["total_gbps"]
                            : nlohmann::json(r.failure_reason(timeout));
    }
    // Compute peaks of the runner's own code on every worker: float32 and uint16 multiply-add
    // chains (the roofline's measured compute ceilings; the layer is the one bench runs).
    nlohmann::json peaks = nlohmann::json::object();
    for (const char* mode : {"f32", "i16"}) {
      const auto r = t->run(
          {"--op", "peak", "--shape", "kiters=16", "--params", std::string("mode=") + mode,
           "--reps", "3", "--warmup", "1", "--min-time", "0.05", "--check", "sample", "--json"},
          k3targets::ProcessOptions::with_timeout(timeout));
      if (r.ok()) {
        const auto pj = nlohmann::json::parse(r.out);
        peaks[mode] = {{"gops", pj["summary"]["gops"]},
                       {"path", pj["path"]},
                       {"workers", pj["params"]["workers"]},
                       {"code", pj["params"]["code"]}};
      } else {
        peaks[mode] = r.failure_reason(timeout);
      }
    }
    auto peak_gops = [&](const char* mode) {
      return peaks[mode].is_object() ? std::optional<double>(peaks[mode]["gops"].get<double>())
                                     : std::nullopt;
    };
    nlohmann::json out = {
        {"target", t->name()},
        {"describe", t->describe()},
        {"cpu_model", facts.cpu_model},
        {"vlen_bits", facts.vlen_bits ? nlohmann::json(*facts.vlen_bits) : nlohmann::json(nullptr)},
        {"marchid", facts.marchid ? nlohmann::json(*facts.marchid) : nlohmann::json(nullptr)},
        {"ime2_gate", ime2_gate},
        {"tcm_backend", tcm_line},
        {"tcm", facts.document["tcm"]},
        {"dispatch", j["dispatch"]},
        {"counters", j.value("counters", nlohmann::json())},
        {"membw_read_gbps", j["summary"]["total_gbps"]},
        {"tcm_bw_gbps", tcm_bw},
        {"membw_mib", a->mib},
        {"peak_gops", peaks},
        {"runner", facts.document["environment"]["runner"]},
    };
    if (!a->no_record) {
      char host[256] = {};
      gethostname(host, sizeof(host) - 1);
      k3store::TargetProbeRecord rec;
      rec.target = t->name();
      rec.cpu_model = facts.cpu_model;
      rec.host = host;
      rec.build_hash = k3bench::sha256_file(t->runner_path());
      rec.membw_read_gbps = j["summary"]["total_gbps"].get<double>();
      rec.peak_f32_gflops = peak_gops("f32");
      rec.peak_i16_gops = peak_gops("i16");
      rec.probe_json = out.dump();
      const std::string db_path = ctx.db_path();
      auto db = k3store::open_for_writing(db_path);
      k3store::insert_target_probe(*db, rec);
      out["recorded_in"] = db_path;
    }
    if (ctx.json) {
      std::cout << out.dump(2) << "\n";
      return;
    }
    fmt::print("target       {}\n", t->describe());
    fmt::print("cpu          {}\n", facts.cpu_model);
    fmt::print("VLEN         {}\n",
               out["vlen_bits"].is_null() ? "no RVV" : out["vlen_bits"].dump() + " bits");
    fmt::print("marchid      {}\n", facts.marchid.value_or("not reported"));
    fmt::print("IME2 gate    {}\n", ime2_gate);
    fmt::print("TCM backend  {}\n", out["tcm_backend"].get<std::string>());
    fmt::print("dispatch     {} ({})\n", j["dispatch"]["path"].get<std::string>(),
               j["dispatch"]["reason"].get<std::string>());
    std::string counters = "none";
    if (j.contains("counters") && !j["counters"]["available"].empty())
      counters = j["counters"]["available"].dump();
    else if (j.contains("counters") && !j["counters"]["unavailable"].empty())
      counters = "unavailable: " + j["counters"]["unavailable"].begin().value().get<std::string>();
    fmt::print("counters     {}\n", counters);
    fmt::print("membw read   {:.2f} GB/s ({} MiB)\n", j["summary"]["total_gbps"].get<double>(),
               a->mib);
    auto gbps = [](const nlohmann::json& v) {
      return v.is_number() ? fmt::format("{:.2f} GB/s", v.get<double>()) : v.dump();
    };
    fmt::print("TCM bw       copy-in {}, read {}, same read from DRAM {} (192 KiB per worker)\n",
               gbps(tcm_bw["copy_in"]), gbps(tcm_bw["read"]), gbps(tcm_bw["dram_read"]));
    auto peak_line = [&](const char* mode) {
      const auto& p = peaks[mode];
      return p.is_object() ? fmt::format("{:.1f} GOPS ({} path, {} workers, {})",
                                         p["gops"].get<double>(), p["path"].get<std::string>(),
                                         p["workers"].get<int>(), p["code"].get<std::string>())
                           : "failed: " + p.get<std::string>();
    };
    fmt::print("peak f32     {}\n", peak_line("f32"));
    fmt::print("peak i16     {}\n", peak_line("i16"));
    if (out.contains("recorded_in"))
      fmt::print("recorded     {} (target_probes: the reports' measured ceilings)\n",
                 out["recorded_in"].get<std::string>());
  });
}

}  // namespace k3cli
