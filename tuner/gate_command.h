// `k3tune tune-gates`: measure a binary choice on many shapes -- the model's shapes plus a K x N
// (or M) grid around them -- and fit the threshold rule that loses least (gates.h).
//   tcm_decode:   linear_decode with tcm=on vs tcm=off (the pipeline's own size gates skipped);
//   decode_path:  linear_decode on the ime2 layer vs the rvv layer, over N x K;
//   prefill_path: linear_prefill on the ime2 layer vs the rvv layer, over M.
// Time is measured with the bench protocol (interleaved rounds, adaptive processes, stored in the
// database); under qemu, or for emulated features, only with --force (labelled) -- or with
// --objective instructions, the deterministic qemu proxy.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "tuner/gates.h"
#include "harness/host/targets/target.h"
#include "tuner/target_facts.h"

namespace k3tuner {

struct GateCommand {
  std::string root, db_path, model, command_line;
  std::string gate = "tcm_decode";  // tcm_decode | decode_path | prefill_path
  std::string objective = "time";   // time | instructions
  std::vector<std::int64_t> ks = {512, 1024, 2048, 4096, 6144};
  std::vector<std::int64_t> ns = {1024, 2048, 4096, 6144};
  std::vector<std::int64_t> ms = {1, 4, 16, 64, 128, 256, 512};
  std::string params;  // fixed, k=v,...
  bool force = false;
  std::string plugin;
  bool progress = true;
  std::function<void(const std::string&)> note;
};

struct GateOutcome {
  TargetFacts facts;
  std::vector<GatePoint> points;
  GateRule rule;
  std::string run_uuid;
  bool forced_emulated = false;
};

GateOutcome run_gates(const k3targets::Target& target, const GateCommand& command);

}  // namespace k3tuner
