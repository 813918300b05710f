#include "harness/host/bench/target_probe.h"

#include <unistd.h>

#include <fmt/format.h>

#include "harness/host/bench/provenance.h"
#include "harness/host/bench/user_error.h"

namespace k3bench {

std::optional<double> TargetProbe::peak_gops(const char* mode) const {
  return peaks.contains(mode) && peaks[mode].is_object()
             ? std::optional<double>(peaks[mode]["gops"].get<double>())
             : std::nullopt;
}

k3store::TargetProbeRecord TargetProbe::record() const {
  char host[256] = {};
  gethostname(host, sizeof(host) - 1);
  k3store::TargetProbeRecord rec;
  rec.target = document["target"];
  rec.cpu_model = facts.cpu_model;
  rec.host = host;
  rec.build_hash = runner_hash;
  rec.membw_read_gbps = membw["summary"]["total_gbps"].get<double>();
  rec.peak_f32_gflops = peak_gops("f32");
  rec.peak_i16_gops = peak_gops("i16");
  rec.probe_json = document.dump();
  return rec;
}

TargetProbe probe_target(const k3targets::Target& t, int mib) {
  if (!t.missing().empty())
    throw k3bench::UserError(fmt::format("target {}: missing {}", t.name(), t.missing().front()));
  const double timeout = t.config().timeout_s;
  // What the runner says of itself: machine, the IME2 gate (open, or why not), the TCM backend
  // and every block's hand-off state (stale locks flagged).
  k3targets::RunnerFacts facts;
  try {
    facts = k3targets::read_runner_facts(t);
  } catch (const k3targets::FactsError& e) {
    throw k3bench::UserError(e.what());
  }
  const auto bw =
      t.run({"--op", "membw", "--shape", fmt::format("mib={}", mib), "--params", "mode=read",
             "--reps", "3", "--warmup", "1", "--min-time", "0.05", "--json"},
            k3targets::ProcessOptions::with_timeout(timeout));
  if (!bw.ok())
    throw k3bench::UserError(
        fmt::format("target {}: membw probe failed: {}", t.name(), bw.failure_reason(timeout)));
  TargetProbe p;
  p.membw = nlohmann::json::parse(bw.out);
  const auto& j = p.membw;
  const std::string ime2_gate =
      facts.ime2_open ? "open (ime2 path taken)" : "closed: " + facts.ime2_reason;
  std::string tcm_line = facts.tcm_backend + " (" + facts.tcm_reason + ")";
  if (!facts.tcm_stale_blocks.empty()) {
    tcm_line += "; STALE locks on blocks " + nlohmann::json(facts.tcm_stale_blocks).dump() +
                " (recover: k3tune tcm release --target " + t.name() + ")";
  }
  // TCM bandwidth from the pool's workers (pinned on a K3): copy into the worker's block, read it
  // back, and the same read loop over DRAM. On a board this answers whether A100-side TCM reads
  // beat DRAM at all; elsewhere the blocks are ordinary memory and the figures say only that.
  nlohmann::json tcm_bw = nlohmann::json::object();
  for (const char* mode : {"copy_in", "read", "dram_read"}) {
    const auto r =
        t.run({"--op", "tcm_bw", "--shape", "kib=192", "--params", std::string("mode=") + mode,
               "--reps", "3", "--warmup", "1", "--min-time", "0.05", "--check", "sample", "--json"},
              k3targets::ProcessOptions::with_timeout(timeout));
    tcm_bw[mode] = r.ok() ? nlohmann::json::parse(r.out)["summary"]["total_gbps"]
                          : nlohmann::json(r.failure_reason(timeout));
  }
  // Compute peaks of the runner's own code on every worker: float32 and uint16 multiply-add
  // chains (the roofline's measured compute ceilings; the layer is the one bench runs).
  nlohmann::json peaks = nlohmann::json::object();
  for (const char* mode : {"f32", "i16"}) {
    const auto r =
        t.run({"--op", "peak", "--shape", "kiters=16", "--params", std::string("mode=") + mode,
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
  p.document = {
      {"target", t.name()},
      {"describe", t.describe()},
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
      {"membw_mib", mib},
      {"peak_gops", peaks},
      {"runner", facts.document["environment"]["runner"]},
  };
  p.facts = facts;
  p.peaks = peaks;
  p.tcm_bw = tcm_bw;
  p.runner_hash = sha256_file(t.runner_path());
  return p;
}

}  // namespace k3bench
