// `k3tune build --variant V`: configure the build preset V (CMakePresets.json: the one table of
// variants), build its runner in the preset's tree (build/k3tune-<variant>) and record the build's
// provenance in the database.
#include <sys/wait.h>
#include <algorithm>
#include <filesystem>
#include <iostream>
#include <thread>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "apps/cli/app_context.h"
#include "harness/host/targets/build_presets.h"
#include "harness/host/store/database.h"
#include "harness/host/bench/provenance.h"
#include "harness/host/store/results.h"

namespace k3cli {
namespace {

int run_shell(const std::string& cmd, bool quiet) {
  const int rc = std::system((quiet ? cmd + " >/dev/null" : cmd).c_str());
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : 1;
}

}  // namespace

void add_build_command(CLI::App& app, AppContext& ctx) {
  struct Args {
    std::string variant;
    // Every CPU by default: the nightly's three builds are most of a cold run's time.
    int jobs = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  };
  auto a = std::make_shared<Args>();
  auto* cmd = app.add_subcommand(
      "build", "configure and build a runner variant; record provenance in the database");
  // The variants for the help text; the callback checks against the root the command runs with.
  std::string names;
  try {
    for (const auto& v : k3targets::runner_variants(ctx.root)) names += (names.empty() ? "" : "|") + v;
  } catch (const k3targets::PresetError&) {
    names = "a runner preset";
  }
  cmd->add_option("--variant", a->variant, names + " (the runner presets of CMakePresets.json)")
      ->required();
  cmd->add_option("-j,--jobs", a->jobs, "parallel compile jobs")->capture_default_str();
  cmd->callback([&ctx, a] {
    const std::string root = ctx.root;
    const auto variants = k3targets::runner_variants(root);
    if (std::find(variants.begin(), variants.end(), a->variant) == variants.end()) {
      throw k3bench::UserError(fmt::format("build --variant {}: not a runner variant of {}/CMakePresets.json "
                                  "(runner variants: {})",
                                  a->variant, root, fmt::join(variants, ", ")));
    }
    const auto preset = k3targets::find_build_preset(root, a->variant);
    const std::string dir = preset.binary_dir;
    if (!preset.toolchain_file.empty() && preset.toolchain_file.find("riscv64") != std::string::npos) {
      const std::string deps = root + "/build/third_party/riscv64/include/benchmark/benchmark.h";
      if (!std::filesystem::exists(deps)) {
        throw k3bench::UserError(
            fmt::format("build --variant {}: Google Benchmark for riscv64 is missing; run: bash "
                        "{}/scripts/build-riscv-deps.sh",
                        a->variant, root));
      }
    }
    // Build output goes to stderr so --json stays parseable on stdout.
    if (run_shell(fmt::format("cmake -S '{}' --preset '{}' 1>&2", root, a->variant), false) != 0) {
      throw k3bench::UserError(
          fmt::format("build --variant {}: cmake configure failed in {}", a->variant, dir));
    }
    if (run_shell(fmt::format("cmake --build '{}' --target k3bench -j{} 1>&2", dir, a->jobs),
                  false) != 0) {
      throw k3bench::UserError(fmt::format("build --variant {}: compilation failed in {}", a->variant, dir));
    }
    const std::string binary = k3targets::runner_binary(dir);
    const auto tree = k3bench::read_build_tree(dir);
    const auto src = k3bench::source_state(root);
    k3store::BuildRecord b{k3bench::sha256_file(binary), a->variant, binary,
                           tree.compiler,       tree.flags, tree.cmake_options.dump(),
                           src.revision,        src.dirty,  "k3tune build"};
    auto db = k3store::open_for_writing(ctx.db_path());
    k3store::upsert_build(*db, b);
    const nlohmann::json j = {
        {"variant", b.variant},
        {"binary", binary},
        {"sha256", b.build_hash},
        {"compiler", b.compiler},
        {"flags", b.flags},
        {"cmake_options", tree.cmake_options},
        {"source_revision", b.source_revision},
        {"source_dirty", src.dirty ? nlohmann::json(*src.dirty) : nlohmann::json(nullptr)},
        {"db", ctx.db_path()}};
    if (ctx.json)
      std::cout << j.dump(2) << "\n";
    else
      fmt::print("built {} ({}): sha256 {}, {} {}{}, recorded in {}\n", binary, b.compiler,
                 b.build_hash.substr(0, 16), b.source_revision.substr(0, 12),
                 src.dirty.value_or(false) ? "dirty" : "clean", "", ctx.db_path());
  });
}

}  // namespace k3cli
