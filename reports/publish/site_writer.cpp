#include "reports/publish/site_writer.h"

#include <algorithm>
#include <fstream>
#include <map>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "harness/host/bench/provenance.h"
#include "reports/report_error.h"

namespace k3publish {
namespace fs = std::filesystem;
namespace {

constexpr const char* kFormat = "k3tune.publish/1";

struct Known {
  std::string sha256;
  std::uintmax_t size = 0;
};

// The manifest's files; PublishInputError when it is not one.
std::map<std::string, Known> read_manifest(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  const auto j = nlohmann::json::parse(text.str(), nullptr, false);
  if (!in || !j.is_object() || j.value("format", "") != kFormat || !j.contains("files") ||
      !j["files"].is_object())
    throw PublishInputError(
        fmt::format("{}: not a manifest of k3tune publish (format {}); nothing written",
                    file.string(), kFormat));
  std::map<std::string, Known> files;
  for (const auto& [path, f] : j["files"].items())
    if (f.is_object()) files[path] = {f.value("sha256", ""), f.value("size", std::uintmax_t{0})};
  return files;
}

void write_file(const fs::path& path, const std::string& content) {
  std::error_code ec;
  fs::create_directories(path.parent_path(), ec);
  const fs::path tmp = path.string() + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << content;
    out.close();
    if (!out) throw k3reports::ReportError(fmt::format("{}: cannot write", tmp.string()));
  }
  fs::rename(tmp, path, ec);
  if (ec)
    throw k3reports::ReportError(fmt::format("{}: cannot write ({})", path.string(), ec.message()));
}

// Why publish must leave `path` (relative to the site folder `dir`) as it is, or "" when it may
// write or remove it: it may when the file does not exist or is, to the byte, what the manifest
// says publish wrote there (`known`, null when the manifest does not list it), and when neither it
// nor a folder on its way is a symbolic link leading out of the site folder.
std::string why_leave(const fs::path& dir, const std::string& path, const Known* known) {
  std::error_code ec;
  const fs::path root = fs::canonical(dir, ec);
  const fs::path full = dir / path;
  // The nearest existing folder on the way, resolved: inside the site folder or not?
  fs::path parent = full.parent_path();
  while (!parent.empty() && !fs::exists(fs::symlink_status(parent, ec)))
    parent = parent.parent_path();
  const fs::path real_parent = fs::canonical(parent, ec);
  const auto [r, p] =
      std::mismatch(root.begin(), root.end(), real_parent.begin(), real_parent.end());
  if (ec || r != root.end())
    return fmt::format("{}: a symbolic link on its way leads out of the site folder (to {})", path,
                       real_parent.string());
  const auto status = fs::symlink_status(full, ec);
  if (!fs::exists(status)) return "";
  if (fs::is_symlink(status)) return fmt::format("{}: a symbolic link publish did not make", path);
  if (!known)
    return fmt::format("{}: not written by publish (the manifest does not list it)", path);
  std::ifstream in(full, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  if (!in || k3bench::sha256_text(text.str()) != known->sha256)
    return fmt::format("{}: changed since publish wrote it", path);
  return "";
}

}  // namespace

void check_publish_dir(const fs::path& dir) {
  std::error_code ec;
  const auto status = fs::status(dir, ec);
  if (!fs::exists(status)) return;
  if (!fs::is_directory(status))
    throw PublishInputError(fmt::format("{}: not a folder; nothing written", dir.string()));
  if (fs::is_empty(dir, ec)) return;
  if (!fs::exists(dir / kManifestName))
    throw PublishInputError(
        fmt::format("{}: holds files that are not an earlier publish (no {}); nothing written",
                    dir.string(), kManifestName));
  read_manifest(dir / kManifestName);
}

WriteOutcome write_site(const fs::path& dir, const std::vector<SiteFile>& files,
                        const std::string& generator) {
  check_publish_dir(dir);
  std::map<std::string, Known> before;
  if (fs::exists(dir / kManifestName)) before = read_manifest(dir / kManifestName);
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec)
    throw k3reports::ReportError(
        fmt::format("{}: cannot create the folder ({})", dir.string(), ec.message()));

  WriteOutcome out;
  nlohmann::json manifest = {
      {"format", kFormat}, {"generator", generator}, {"files", nlohmann::json::object()}};
  std::map<std::string, bool> in_site;
  for (const auto& f : files) {
    const std::string hash = k3bench::sha256_text(f.content);
    const fs::path path = dir / f.path;
    in_site[f.path] = true;
    auto known = before.find(f.path);
    std::error_code size_ec;
    const bool same = known != before.end() && known->second.sha256 == hash &&
                      known->second.size == f.content.size() &&
                      fs::file_size(path, size_ec) == f.content.size() && !size_ec;
    if (same) {
      ++out.unchanged;
    } else if (auto why = why_leave(dir, f.path, known == before.end() ? nullptr : &known->second);
               !why.empty()) {
      // Not ours to overwrite; not in the manifest either, so the next publish leaves it too.
      out.left.push_back(why + ": left as it is");
      continue;
    } else {
      write_file(path, f.content);
      ++out.written;
      out.written_paths.push_back(f.path);
    }
    manifest["files"][f.path] = {{"sha256", hash}, {"size", f.content.size()}};
    out.bytes += f.content.size();
    if (f.path.ends_with(".html") && f.content.size() > out.largest_page_bytes) {
      out.largest_page_bytes = f.content.size();
      out.largest_page = f.path;
    }
  }
  out.files = files.size();
  // Pages of the earlier publish the site no longer has (only files it wrote itself).
  for (const auto& [path, known] : before) {
    // Only inside the folder, whatever a damaged manifest says.
    if (in_site.count(path) || path.find("..") != std::string::npos || fs::path(path).is_absolute())
      continue;
    if (auto why = why_leave(dir, path, &known); !why.empty()) {
      out.left.push_back(why + ": not removed");
      continue;
    }
    if (fs::remove(dir / path, ec)) ++out.removed;
  }
  // The manifest too only when it changed: a publish that changed nothing writes nothing.
  const std::string text = manifest.dump(1) + "\n";
  std::ifstream old(dir / kManifestName, std::ios::binary);
  std::ostringstream old_text;
  old_text << old.rdbuf();
  if (!old || old_text.str() != text) write_file(dir / kManifestName, text);
  return out;
}

}  // namespace k3publish
