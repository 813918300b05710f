#include "publish_test_support.h"

#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <sstream>

#include "harness/host/targets/process.h"

namespace fs = std::filesystem;

namespace k3test::publish {

Cmd k3tune(const std::string& db, const std::vector<std::string>& args) {
  std::vector<std::string> argv = {
      "env", "K3TUNE_JS_DIR=" + std::string(K3_JS_DIR), K3TUNE_PATH, "--root", K3TUNE_ROOT, "--db",
      db};
  argv.insert(argv.end(), args.begin(), args.end());
  const auto r = k3targets::run_process(argv, k3targets::ProcessOptions::with_timeout(600));
  return {r.exit_code, r.out, r.err};
}

nlohmann::json publish_json(const std::string& db, const fs::path& dir) {
  const Cmd r = k3tune(db, {"--json", "publish", dir.string()});
  EXPECT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out, nullptr, false);
  EXPECT_TRUE(j.is_object()) << r.out << r.err;
  return j.is_object() ? j : nlohmann::json::object();
}

std::string read(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::vector<std::string> files_of(const fs::path& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.is_regular_file()) out.push_back(fs::relative(e.path(), dir).generic_string());
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<std::string> links_of(const std::string& page) {
  static const std::regex href("<a href=\"([^\"]*)\"");
  std::vector<std::string> out;
  for (auto it = std::sregex_iterator(page.begin(), page.end(), href); it != std::sregex_iterator();
       ++it)
    out.push_back((*it)[1]);
  return out;
}

std::string page_starting(const fs::path& dir, const std::string& prefix) {
  std::string found;
  for (const auto& f : files_of(dir)) {
    if (f.rfind(prefix, 0) != 0) continue;
    if (!found.empty()) return "";
    found = f;
  }
  return found;
}

std::size_t count_of(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + what.size()))
    ++n;
  return n;
}

std::string section_of(const std::string& page, const std::string& id) {
  const auto start = page.find("<section id=\"" + id + "\">");
  if (start == std::string::npos) return "";
  return page.substr(start, page.find("</section>", start) - start);
}

}  // namespace k3test::publish
