#include "apps/cli/app_context.h"

#include <cstdlib>
#include <map>

#include <fmt/format.h>

namespace k3cli {

int& exit_code() {
  static int code = kOk;
  return code;
}

std::string AppContext::db_path() const {
  if (!db.empty()) return db;
  const char* env_db = std::getenv("K3TUNE_DB");
  return env_db ? env_db : root + "/results/k3tune.db";
}

std::string AppContext::targets_path() const {
  return targets_file.empty() ? root + "/configs/targets.toml" : targets_file;
}

std::unique_ptr<k3targets::Target> AppContext::target(const std::string& name) const {
  std::map<std::string, k3targets::TargetConfig> configs;
  const std::string targets_file = targets_path();
  try {
    configs = k3targets::load_target_configs(targets_file);
  } catch (const std::runtime_error& e) {
    throw k3bench::UserError(e.what());
  }
  auto it = configs.find(name);
  if (it == configs.end()) {
    std::string known;
    for (const auto& [n, c] : configs) known += (known.empty() ? "" : ", ") + n;
    throw k3bench::UserError(
        fmt::format("--target: unknown target '{}' (known in {}: {})", name, targets_file, known));
  }
  try {
    return k3targets::make_target(it->second, root);
  } catch (const std::runtime_error& e) {
    throw k3bench::UserError(e.what());
  }
}

}  // namespace k3cli
