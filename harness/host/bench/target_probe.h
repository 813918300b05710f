// What `k3tune probe` measures on a target: what the runner says of itself (machine, IME2 gate,
// TCM backend and block states), streaming memory bandwidth (membw), TCM bandwidth (tcm_bw) and
// the compute peaks of the runner's own code (peak), as one document and the record the reports'
// roofline reads (store/probes.h).
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "harness/host/store/probes.h"
#include "harness/host/targets/runner_facts.h"
#include "harness/host/targets/target.h"

namespace k3bench {

struct TargetProbe {
  k3targets::RunnerFacts facts;
  nlohmann::json membw;     // the membw run's runner document
  nlohmann::json document;  // what `probe --json` prints
  nlohmann::json peaks, tcm_bw;
  std::string runner_hash;  // SHA-256 of the runner probed
  std::optional<double> peak_gops(const char* mode) const;
  // The row of target_probes: the measured ceilings with the whole document.
  k3store::TargetProbeRecord record() const;
};

// UserError (one line) when the target lacks something, its runner cannot describe itself or the
// membw probe fails; a failed tcm_bw or peak probe is reported in the document instead.
TargetProbe probe_target(const k3targets::Target& t, int mib);

}  // namespace k3bench
