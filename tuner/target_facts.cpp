#include "target_facts.h"

#include <fmt/format.h>

#include "user_error.h"

namespace k3tuner {

TargetFacts probe_target(const k3targets::Target& target) {
  const double timeout = target.config().timeout_s;
  auto run_json = [&](const std::vector<std::string>& args, const char* what) {
    const auto r = target.run(args, k3targets::ProcessOptions::with_timeout(timeout));
    if (!r.ok())
      throw k3tune::UserError(fmt::format("target {}: {} failed: {}", target.name(), what, r.failure_reason(timeout)));
    return nlohmann::json::parse(r.out);
  };
  // The best path the runner takes says whether IME2 runs here, and whether it is emulated.
  const auto c = run_json({"--op", "residual_add", "--shape", "rows=1,dim=64", "--reps", "1", "--warmup", "0",
                           "--iterations", "1", "--check", "none", "--json"},
                          "a probe run");
  const auto tcm = run_json({"--tcm-status", "--json"}, "--tcm-status");
  const auto& env = c.at("environment");
  TargetFacts t;
  const int cpus = static_cast<int>(env.value("cpus_allowed", nlohmann::json::array()).size());
  const nlohmann::json vlenb = env.value("vlenb", nlohmann::json());
  const std::string backend = tcm.value("backend", "off");
  const auto& geometry = tcm.value("geometry", nlohmann::json::object());
  t.facts = {{"cpus", double(std::max(cpus, 1))},
             {"vlen", vlenb.is_number() ? vlenb.get<double>() * 8 : 0.0},
             {"ime2", c["dispatch"].value("path", "") == "ime2" ? 1.0 : 0.0},
             {"tcm_blocks", backend == "off" ? 0.0 : geometry.value("blocks", 0.0)},
             {"tcm_block_bytes", backend == "off" ? 0.0 : geometry.value("block_bytes", 0.0)},
             {"tcm_emulated", backend == "emulated" ? 1.0 : 0.0}};
  t.ime2_emulated = c["dispatch"].value("emulated", false);
  t.emulated_target = target.config().kind == "qemu";
  t.facts["emulated"] = t.emulated_target ? 1.0 : 0.0;
  nlohmann::json marchid = env.value("marchid", nlohmann::json());
  if (marchid.is_string()) {
    std::string m = marchid.get<std::string>();
    for (auto& ch : m) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    marchid = m;
  }
  t.fingerprint = {{"marchid", marchid},
                   {"vlen", vlenb.is_number() ? nlohmann::json(vlenb.get<int>() * 8) : nlohmann::json(nullptr)},
                   {"cpu_model", env.value("cpu_model", "unknown")},
                   {"cpus", std::max(cpus, 1)},
                   {"tcm", {{"backend", backend},
                            {"blocks", backend == "off" ? 0 : geometry.value("blocks", 0)},
                            {"block_bytes", backend == "off" ? 0 : geometry.value("block_bytes", 0)}}}};
  t.describe = fmt::format("{}: {} CPUs, VLEN {}, TCM {}, path {}{}", target.name(), cpus,
                           vlenb.is_number() ? std::to_string(vlenb.get<int>() * 8) : "none", backend,
                           c["dispatch"].value("path", "?"), t.ime2_emulated ? " (emulated)" : "");
  return t;
}

Variables with_shape(const Variables& facts, const nlohmann::json& shape) {
  Variables v = facts;
  for (const auto& [k, x] : shape.items())
    if (x.is_number()) v[k] = x.get<double>();
  return v;
}

}  // namespace k3tuner
