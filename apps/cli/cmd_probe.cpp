// `k3tune probe --target T`: what the runner sees on a target -- VLEN, marchid, the IME2 gate, the
// TCM backend and block states (stale locks), hardware counters, streaming memory bandwidth (the
// membw op), TCM bandwidth (the tcm_bw op) and the compute peaks of the runner's own code (the
// peak op). The bandwidth and peaks are recorded in the database (target_probes) as the measured
// ceilings of the reports' roofline; --no-record leaves the database alone.
#include <filesystem>
#include <iostream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "apps/cli/app_context.h"
#include "harness/host/bench/target_probe.h"
#include "harness/host/store/database.h"
#include "harness/host/store/probes.h"

namespace k3cli {
namespace {

void print_probe(const k3bench::TargetProbe& p, int mib) {
  const auto& facts = p.facts;
  const auto& j = p.membw;
  const auto& out = p.document;
  const auto& tcm_bw = p.tcm_bw;
  const auto& peaks = p.peaks;
  const std::string ime2_gate = out["ime2_gate"];
  fmt::print("target       {}\n", out["describe"].get<std::string>());
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
  fmt::print("membw read   {:.2f} GB/s ({} MiB)\n", j["summary"]["total_gbps"].get<double>(), mib);
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
}

}  // namespace

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
    auto p = k3bench::probe_target(*ctx.target(a->target), a->mib);
    if (!a->no_record) {
      const std::string db_path = ctx.db_path();
      auto db = k3store::open_for_writing(db_path);
      k3store::insert_target_probe(*db, p.record());
      p.document["recorded_in"] = db_path;
    }
    if (ctx.json)
      std::cout << p.document.dump(2) << "\n";
    else
      print_probe(p, a->mib);
  });
}

}  // namespace k3cli
