#include "harness/runner/run_settings.h"

#include <fstream>

namespace k3runner {

RunSettings& run_settings() {
  static RunSettings settings;
  return settings;
}

nlohmann::json run_settings_json() {
  const RunSettings& s = run_settings();
  std::string thp_mode;
  std::ifstream f("/sys/kernel/mm/transparent_hugepage/enabled");
  if (f) std::getline(f, thp_mode);  // e.g. "always [madvise] never": the bracket is the mode
  return {{"cpus", s.cpus},
          {"pool_wait", s.pool_wait},
          {"huge_pages", s.huge_pages},
          {"weight_load", s.weight_load},
          {"thp_system", thp_mode.empty() ? nlohmann::json(nullptr) : nlohmann::json(thp_mode)}};
}

}  // namespace k3runner
