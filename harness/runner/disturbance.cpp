#include "harness/runner/disturbance.h"

namespace k3runner {

std::vector<std::string> disturbances(const nlohmann::json& before, const nlohmann::json& after,
                                      int cpu_before, int cpu_after, double migrations, bool pinned,
                                      double cpu_share, double thermal_tolerance_c) {
  std::vector<std::string> flags;
  const auto freq_b = before.value("cpufreq_khz", nlohmann::json::object());
  const auto freq_a = after.value("cpufreq_khz", nlohmann::json::object());
  for (const auto& [cpu, khz] : freq_b.items()) {
    if (freq_a.contains(cpu) && freq_a[cpu] != khz) {
      flags.emplace_back("frequency-change");
      break;
    }
  }
  const auto temp_b = before.value("thermal_c", nlohmann::json::object());
  const auto temp_a = after.value("thermal_c", nlohmann::json::object());
  for (const auto& [zone, c] : temp_b.items()) {
    if (temp_a.contains(zone) &&
        temp_a[zone].get<double>() - c.get<double>() > thermal_tolerance_c) {
      flags.emplace_back("thermal-rise");
      break;
    }
  }
  if (pinned &&
      (migrations > 0 || (cpu_before >= 0 && cpu_after >= 0 && cpu_before != cpu_after))) {
    flags.emplace_back("cpu-migration");
  }
  if (cpu_share >= 0 && cpu_share < 0.9) flags.emplace_back("preempted");
  return flags;
}

}  // namespace k3runner
