#include "browser_support.h"

#include <gtest/gtest.h>

#include "harness/host/targets/process.h"

namespace k3test {

nlohmann::json check_in_browser(const std::filesystem::path& html,
                                const std::filesystem::path& out_dir,
                                const std::string& screenshot) {
  const std::vector<std::string> argv = {
      "env",         "NODE_PATH=" + std::string(K3_JS_DIR) + "/node_modules",
      K3_NODE,       K3_BROWSER_CHECK,
      html.string(), out_dir.string(),
      screenshot};
  const auto r = k3targets::run_process(argv, k3targets::ProcessOptions::with_timeout(300));
  EXPECT_EQ(r.exit_code, 0) << "browser_check.js: " << r.err;
  const nlohmann::json result = nlohmann::json::parse(r.out, nullptr, false);
  EXPECT_TRUE(result.is_object()) << r.out << r.err;
  return result.is_object() ? result : nlohmann::json::object();
}

}  // namespace k3test
