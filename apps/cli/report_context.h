// What `report` and `compare` share on the CLI side: where the vendored chart scripts are, and the
// confirm step's context (database, kept runners, the targets file).
#pragma once

#include <cstdlib>
#include <string>

#include "apps/cli/app_context.h"
#include "reports/confirm.h"
#include "reports/report_error.h"

namespace k3cli {

inline std::string default_js_dir(const AppContext& ctx) {
  const char* env = std::getenv("K3TUNE_JS_DIR");
  return env ? env : ctx.root + "/build/third_party/js";
}

inline k3reports::ConfirmContext confirm_context(const AppContext& ctx, const std::string& db,
                                                 const std::string& runners_dir) {
  k3reports::ConfirmContext c;
  c.db_path = db;
  c.root = ctx.root;
  c.runners_dir = runners_dir;
  try {
    c.targets = k3targets::load_target_configs(ctx.targets_path());
  } catch (const std::runtime_error& e) {
    throw k3reports::ReportError(e.what());
  }
  c.progress = !ctx.quiet;
  return c;
}

}  // namespace k3cli
