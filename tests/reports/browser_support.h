// Runs tests/reports/browser_check.js on a page (Debian's chromium, headless, fresh profile): the
// report's browser test and the published site's share it.
#pragma once

#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

namespace k3test {

// browser_check.js's JSON result for `html` (screenshot `screenshot` into `out_dir`), or an empty
// object after a test failure naming what went wrong.
nlohmann::json check_in_browser(const std::filesystem::path& html,
                                const std::filesystem::path& out_dir,
                                const std::string& screenshot);

}  // namespace k3test
