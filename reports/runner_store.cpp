#include "reports/runner_store.h"

#include <filesystem>
#include <system_error>

#include <fmt/format.h>

#include "harness/host/bench/build_pairing.h"
#include "harness/host/bench/provenance.h"
#include "harness/host/bench/user_error.h"

namespace k3reports {
namespace fs = std::filesystem;
namespace {

bool has_hash(const std::string& path, const std::string& hash) {
  if (path.empty() || !fs::is_regular_file(path)) return false;
  try {
    return k3bench::sha256_file(path) == hash;
  } catch (const k3bench::UserError&) {
    return false;
  }
}

}  // namespace

std::string default_runners_dir(const std::string& db_path) {
  return (fs::absolute(db_path).parent_path() / "runners").string();
}

RunnerLocation find_runner(const std::string& dir, const std::string& hash,
                           const std::string& binary_path) {
  const std::string kept = (fs::path(dir) / hash).string();
  if (has_hash(kept, hash)) return {kept, "kept copy"};
  if (has_hash(binary_path, hash)) return {binary_path, "the recorded binary"};
  return {"",
          fmt::format("runner {} was not kept ({}) and {} is gone or was rebuilt",
                      hash.substr(0, 12), kept, binary_path.empty() ? "its binary" : binary_path)};
}

namespace {

// The build's kernel plugin beside its runner (a build tree's, build_pairing.h), kept as
// <kept runner>.plugin.so so that a later A/B can load this build into the runner under test.
// Copied only together with the runner: a plugin beside a binary that still has its recorded hash
// is that build's (both are linked by one build of the tree); the A/B checks it again by its build.
void keep_plugin(const std::string& binary_path, const fs::path& kept) {
  std::error_code ec;
  const fs::path plugin = fs::path(binary_path).parent_path() / k3bench::kPluginFile;
  const fs::path target = kept.string() + k3bench::kKeptPluginSuffix;
  if (!fs::is_regular_file(plugin, ec) || fs::exists(target, ec)) return;
  const fs::path tmp = target.string() + ".tmp";
  fs::copy_file(plugin, tmp, fs::copy_options::overwrite_existing, ec);
  if (!ec) fs::rename(tmp, target, ec);
  if (ec) fs::remove(tmp, ec);
}

}  // namespace

RunnerLocation keep_runner(const std::string& dir, const std::string& hash,
                           const std::string& binary_path) {
  const fs::path kept = fs::path(dir) / hash;
  if (has_hash(kept.string(), hash)) {
    if (has_hash(binary_path, hash)) keep_plugin(binary_path, kept);
    return {kept.string(), "already kept"};
  }
  if (!has_hash(binary_path, hash)) {
    return {"", fmt::format("not kept: {} is gone or no longer has sha256 {}",
                            binary_path.empty() ? "the binary" : binary_path, hash.substr(0, 12))};
  }
  std::error_code ec;
  fs::create_directories(dir, ec);
  const fs::path tmp = fs::path(dir) / ("." + hash + ".tmp");
  fs::copy_file(binary_path, tmp, fs::copy_options::overwrite_existing, ec);
  if (!ec)
    fs::permissions(tmp,
                    fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                        fs::perms::others_read | fs::perms::others_exec,
                    ec);
  if (!ec) fs::rename(tmp, kept, ec);
  if (ec) {
    fs::remove(tmp, ec);
    return {"", fmt::format("not kept: cannot copy {} to {}", binary_path, kept.string())};
  }
  if (!has_hash(kept.string(), hash)) return {"", "not kept: the copy does not have the hash"};
  keep_plugin(binary_path, kept);
  return {kept.string(), "kept now"};
}

}  // namespace k3reports
