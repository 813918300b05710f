#include "apps/bisect/commit_runners.h"

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include <fmt/format.h>

#include "apps/nightly/revision_ancestry.h"
#include "harness/host/bench/build_pairing.h"
#include "harness/host/bench/provenance.h"
#include "harness/host/store/database.h"
#include "harness/host/store/results.h"
#include "harness/host/targets/build_presets.h"
#include "harness/host/targets/process.h"
#include "reports/runner_store.h"

namespace k3bisect {
namespace fs = std::filesystem;
namespace {

std::string trimmed(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ')) s.pop_back();
  return s;
}

// A build's verdict line, the log's first line, so a later bisection reads it without building.
constexpr const char* kFailedMark = "k3tune bisect: build failed: ";

std::string read_first_line(const fs::path& p) {
  std::ifstream f(p);
  std::string line;
  std::getline(f, line);
  return line;
}

// The first line of a build's output that names an error (else the last line), with the
// worktree's path taken out (file names relative to the commit's tree): the skip's reason.
std::string error_line(const std::string& out, const std::string& tree) {
  std::istringstream in(out);
  std::string line, last, error;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    last = line;
    if (error.empty() && (line.find("error") != std::string::npos)) error = line;
  }
  std::string s = error.empty() ? last : error;
  for (auto at = s.find(tree + "/"); at != std::string::npos; at = s.find(tree + "/"))
    s.erase(at, tree.size() + 1);
  return s;
}

}  // namespace

std::string resolve_commit(const std::string& repo, const std::string& revision) {
  if (revision.empty() || revision.starts_with("-")) return "";
  const auto r =
      k3nightly::run_git(repo, {"rev-parse", "--verify", "--quiet", revision + "^{commit}"});
  return r.ok() ? trimmed(r.out) : "";
}

std::vector<std::string> commits_between(const std::string& repo, const std::string& good,
                                         const std::string& bad) {
  const auto r = k3nightly::run_git(
      repo, {"rev-list", "--reverse", "--topo-order", "--ancestry-path", good + ".." + bad});
  if (!r.ok())
    throw std::runtime_error("git rev-list failed in " + repo + ": " + k3targets::last_line(r.err));
  std::vector<std::string> out;
  std::istringstream in(r.out);
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) out.push_back(line);
  return out;
}

std::string commit_title(const std::string& repo, const std::string& commit) {
  const auto r = k3nightly::run_git(repo, {"log", "-1", "--format=%h %s", commit});
  return r.ok() ? trimmed(r.out) : commit.substr(0, 12);
}

CommitRunners::CommitRunners(CommitRunnerOptions options) : o_(std::move(options)) {}

CommitRunner CommitRunners::runner_of(const std::string& commit) {
  // Built before: the builds table knows a clean build of this commit and variant whose runner
  // is still at hand (kept, or its recorded binary unchanged).
  {
    auto db = k3store::open_for_writing(o_.db_path);
    for (const auto& b : k3store::clean_builds(*db, commit, o_.variant)) {
      const auto found = k3reports::find_runner(o_.runners_dir, b.build_hash, b.binary_path);
      if (!found.path.empty()) return {commit, found.path, b.build_hash, "", 0};
    }
  }
  const fs::path log = fs::path(o_.cache_dir) / fmt::format("{}-{}.log", o_.variant, commit);
  if (const std::string first = read_first_line(log); first.starts_with(kFailedMark))
    return {commit, "", "", first.substr(std::string(kFailedMark).size()) + " (earlier build)", 0};
  return build(commit);
}

CommitRunner CommitRunners::build(const std::string& commit) {
  const auto start = std::chrono::steady_clock::now();
  fs::create_directories(o_.cache_dir);
  const fs::path tree =
      fs::absolute(fs::path(o_.cache_dir) / fmt::format("{}-{}", o_.variant, commit));
  const fs::path log = fs::path(o_.cache_dir) / fmt::format("{}-{}.log", o_.variant, commit);
  std::string out;  // the whole build's output, written to the log
  auto finish = [&](std::string failure, std::string runner, std::string hash) {
    std::ofstream f(log);
    f << (failure.empty() ? "k3tune bisect: built " + runner : kFailedMark + failure) << "\n"
      << out;
    k3nightly::run_git(o_.repo, {"worktree", "remove", "--force", tree.string()});
    const double s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return CommitRunner{commit, std::move(runner), std::move(hash), std::move(failure), s};
  };
  if (o_.progress)
    std::cerr << fmt::format("k3tune: bisect: building {} ({})\n", commit_title(o_.repo, commit),
                             o_.variant);
  if (fs::exists(tree))
    k3nightly::run_git(o_.repo, {"worktree", "remove", "--force", tree.string()});
  k3nightly::run_git(o_.repo, {"worktree", "prune"});
  const auto add =
      k3nightly::run_git(o_.repo, {"worktree", "add", "--detach", tree.string(), commit});
  if (!add.ok()) return finish("git worktree add failed: " + k3targets::last_line(add.err), "", "");
  // The riscv64 dependencies are built by a script into the checkout, not kept in git.
  if (const fs::path deps = fs::path(o_.repo) / "build" / "third_party"; fs::exists(deps)) {
    std::error_code ec;
    fs::create_directories(tree / "build", ec);
    fs::create_directory_symlink(fs::absolute(deps), tree / "build" / "third_party", ec);
  }
  std::string binary_dir;
  try {
    binary_dir = k3targets::find_build_preset(tree.string(), o_.variant).binary_dir;
  } catch (const k3targets::PresetError& e) {
    return finish(fmt::format("no preset {} at this commit: {}", o_.variant, e.what()), "", "");
  }
  const auto opt = k3targets::ProcessOptions::with_timeout(3600);
  const auto configure =
      k3targets::run_process({"cmake", "-S", tree.string(), "--preset", o_.variant}, opt);
  out += configure.out + configure.err;
  if (!configure.ok())
    return finish(
        "cmake configure failed: " + error_line(configure.out + configure.err, tree.string()), "",
        "");
  const auto make = k3targets::run_process(
      {"cmake", "--build", binary_dir, "--target", "k3bench", fmt::format("-j{}", o_.jobs)}, opt);
  out += make.out + make.err;
  if (!make.ok())
    return finish("does not build: " + error_line(make.out + make.err, tree.string()), "", "");
  const std::string binary = k3targets::runner_binary(binary_dir);
  // The commit's kernel plugin too, where the commit has one (a dynamically linked preset from
  // the plugin on): kept beside its runner, it lets the probes pair both commits inside one
  // process. Best effort: an older commit without the target keeps the rounds.
  const fs::path plugin = fs::path(binary).parent_path() / k3bench::kPluginFile;
  std::error_code ec;
  fs::remove(plugin, ec);
  const auto with_plugin = k3targets::run_process(
      {"cmake", "--build", binary_dir, "--target", "k3bench_plugin", fmt::format("-j{}", o_.jobs)},
      opt);
  if (!with_plugin.ok()) fs::remove(plugin, ec);
  const std::string hash = k3bench::sha256_file(binary);
  const auto kept = k3reports::keep_runner(o_.runners_dir, hash, binary);
  if (kept.path.empty()) return finish("built, but " + kept.note, "", "");
  const auto info = k3bench::read_build_tree(binary_dir);
  {
    auto db = k3store::open_for_writing(o_.db_path);
    k3store::upsert_build(*db, {hash, o_.variant, kept.path, info.compiler, info.flags,
                                info.cmake_options.dump(), commit, false, "k3tune bisect"});
  }
  return finish("", kept.path, hash);
}

}  // namespace k3bisect
