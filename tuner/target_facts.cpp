#include "tuner/target_facts.h"

#include <fmt/format.h>

#include "harness/host/targets/runner_facts.h"
#include "harness/host/bench/user_error.h"

namespace k3tuner {

TargetFacts probe_target(const k3targets::Target& target) {
  k3targets::RunnerFacts f;
  try {
    f = k3targets::read_runner_facts(target);
  } catch (const k3targets::FactsError& e) {
    throw k3bench::UserError(e.what());
  }
  const bool tcm = f.tcm_backend != "off";
  TargetFacts t;
  t.facts = {{"cpus", double(f.cpus())},
             {"vlen", f.vlen_bits ? double(*f.vlen_bits) : 0.0},
             {"ime2", f.path == "ime2" ? 1.0 : 0.0},  // the best path the runner takes here
             {"tcm_blocks", tcm ? double(f.tcm_blocks) : 0.0},
             {"tcm_block_bytes", tcm ? double(f.tcm_block_bytes) : 0.0},
             {"tcm_emulated", f.tcm_backend == "emulated" ? 1.0 : 0.0}};
  t.ime2_emulated = f.path_emulated;
  t.best_path = f.path;
  t.emulated_target = target.emulated();
  t.facts["emulated"] = t.emulated_target ? 1.0 : 0.0;
  t.fingerprint = {
      {"marchid", f.marchid ? nlohmann::json(*f.marchid) : nlohmann::json(nullptr)},
      {"vlen", f.vlen_bits ? nlohmann::json(*f.vlen_bits) : nlohmann::json(nullptr)},
      {"cpu_model", f.cpu_model},
      {"cpus", f.cpus()},
      {"tcm",
       {{"backend", f.tcm_backend},
        {"blocks", tcm ? f.tcm_blocks : 0},
        {"block_bytes", tcm ? f.tcm_block_bytes : 0}}}};
  t.describe = fmt::format("{}: {} CPUs, VLEN {}, TCM {}, path {}{}", target.name(),
                           f.cpus_allowed.size(),
                           f.vlen_bits ? std::to_string(*f.vlen_bits) : "none", f.tcm_backend,
                           f.path, t.ime2_emulated ? " (emulated)" : "");
  return t;
}

Variables with_shape(const Variables& facts, const nlohmann::json& shape) {
  Variables v = facts;
  for (const auto& [k, x] : shape.items())
    if (x.is_number()) v[k] = x.get<double>();
  return v;
}

}  // namespace k3tuner
