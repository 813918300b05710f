#include "harness/runner/facts.h"

#include <iostream>

#include <fmt/format.h>

#include "harness/runner/environment.h"
#include "harness/runner/errors.h"
#include "harness/runner/path_option.h"
#include "harness/runner/tcm_status.h"

namespace k3runner {
namespace {

// Bump when a field changes meaning or disappears (adding one is compatible).
constexpr int kFactsVersion = 1;

nlohmann::json path_json(const k3k::PathDecision& d) {
  return {{"path", k3k::to_string(d.path)}, {"reason", d.reason}, {"emulated", d.emulated}};
}

}  // namespace

nlohmann::json runner_facts() {
  nlohmann::json out;
  out["facts_version"] = kFactsVersion;
  out["environment"] = environment_static();
  out["environment"]["readings"] = environment_readings();
  out["dispatch"] = path_json(decide_path_option("auto"));
  // The IME2 gate asked directly: open, or the reason it is closed here (not built, SIGILL probe,
  // marchid, VLEN below 1024...).
  try {
    const auto ime2 = k3k::decide_path(k3k::KernelPath::kIme2);
    out["ime2_gate"] = {{"open", true}, {"reason", ime2.reason}, {"emulated", ime2.emulated}};
  } catch (const std::invalid_argument& e) {
    out["ime2_gate"] = {{"open", false}, {"reason", e.what()}, {"emulated", false}};
  }
  out["tcm"] = tcm_status_json("auto");
  return out;
}

int run_facts(bool json, const nlohmann::json& build_b) {
  nlohmann::json f = runner_facts();
  if (!build_b.is_null()) f["build_b"] = build_b;
  if (json) {
    std::cout << f.dump(2) << "\n";
    return kExitOk;
  }
  const auto& env = f["environment"];
  fmt::print("runner    k3bench {} ({})\n", env["runner"]["version"].get<std::string>(),
             env["runner"]["source_revision"].get<std::string>());
  fmt::print("build     {} {} {}\n", env["build"]["target_arch"].get<std::string>(),
             env["build"]["build_type"].get<std::string>(),
             env["build"]["compiler"].get<std::string>());
  fmt::print("cpu       {} ({} allowed of {} online)\n", env["cpu_model"].get<std::string>(),
             env["cpus_allowed"].size(), env["cpus_online"].get<long>());
  fmt::print("vlen      {}\n", env["vlenb"].is_number()
                                   ? std::to_string(env["vlenb"].get<int>() * 8)
                                   : std::string("none (no RVV)"));
  fmt::print("marchid   {}\n",
             env["marchid"].is_string() ? env["marchid"].get<std::string>() : std::string("none"));
  fmt::print("path      {}{} ({})\n", f["dispatch"]["path"].get<std::string>(),
             f["dispatch"]["emulated"].get<bool>() ? ", emulated" : "",
             f["dispatch"]["reason"].get<std::string>());
  fmt::print("ime2 gate {}: {}\n", f["ime2_gate"]["open"].get<bool>() ? "open" : "closed",
             f["ime2_gate"]["reason"].get<std::string>());
  fmt::print("tcm       {} ({})\n", f["tcm"]["backend"].get<std::string>(),
             f["tcm"]["reason"].get<std::string>());
  if (!build_b.is_null())
    fmt::print("build b   {} ({}), plugin interface {}\n",
               build_b["build"]["runner"].value("source_revision", "?"),
               build_b["plugin"].get<std::string>(), build_b["interface_version"].get<int>());
  return kExitOk;
}

}  // namespace k3runner
