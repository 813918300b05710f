#include "reports/report_files.h"

#include <filesystem>
#include <fstream>

#include <fmt/format.h>

#include "reports/html.h"
#include "reports/markdown.h"
#include "reports/report_error.h"

namespace k3reports {
namespace fs = std::filesystem;
namespace {

void write_file(const fs::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  out.close();
  if (!out) throw ReportError(fmt::format("{}: cannot write", path.string()));
}

}  // namespace

std::vector<std::string> write_report(const Report& report, const ReportRequest& request) {
  const fs::path dir = request.out_dir;
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec || !fs::is_directory(dir))
    throw ReportError(fmt::format("{}: cannot create the output directory", dir.string()));
  // The HTML first: it needs the vendored scripts, and a report is all or nothing.
  std::string html;
  if (request.html) html = report_html(report, request.js_dir);
  std::vector<std::string> files;
  write_file(dir / "summary.md", summary_markdown(report));
  files.push_back((dir / "summary.md").string());
  write_file(dir / "report.json", report_json(report).dump(2) + "\n");
  files.push_back((dir / "report.json").string());
  if (request.html) {
    write_file(dir / "report.html", html);
    files.push_back((dir / "report.html").string());
  }
  return files;
}

}  // namespace k3reports
