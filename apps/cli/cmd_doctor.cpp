// `k3tune doctor`: what this machine can do, and for each missing piece the command that fixes it.
// With --farm: the first-night check of a farm's boards instead (cmd_doctor_farm.h).
#include <filesystem>
#include <iostream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "apps/cli/app_context.h"
#include "apps/cli/cmd_doctor_farm.h"
#include "harness/host/bench/provenance.h"

namespace k3cli {
namespace {

struct Check {
  std::string what;
  bool ok = false;
  std::string detail;  // version or path when ok
  std::string fix;     // command that installs it
  bool required = true;
};

std::string first_line(const std::string& cmd) {
  std::string s = k3bench::capture(cmd + " 2>/dev/null | head -n1");
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.pop_back();
  return s;
}

Check tool(const std::string& what, const std::string& program, const std::string& package,
           bool required = true) {
  const bool ok = k3targets::on_path(program);
  return {what, ok, ok ? first_line(program + " --version") : "", "apt-get install -y " + package,
          required};
}

Check file(const std::string& what, const std::string& path, const std::string& fix,
           bool required = true) {
  const bool ok = std::filesystem::exists(path);
  return {what, ok, ok ? path : "", fix, required};
}

}  // namespace

void add_doctor_command(CLI::App& app, AppContext& ctx) {
  auto* cmd = app.add_subcommand(
      "doctor", "check compilers, cross toolchain, qemu, Google Benchmark and targets");
  auto farm = std::make_shared<FarmDoctorArgs>();
  cmd->fallthrough();  // global options (--json, --db) may follow
  cmd->add_option("--farm", farm->farm,
                  "check every board of this farm (file, or 'local') before its first night "
                  "instead of this machine");
  cmd->add_option("--board", farm->boards, "with --farm: only this board (repeatable)");
  cmd->add_option("--tag", farm->tags, "with --farm: only boards with this tag (repeatable)");
  auto* min_free = cmd->add_option(
      "--min-free-mib", farm->min_free_mib,
      "with --farm: free space a night needs in each board's work_dir (default 1024)");
  cmd->callback([&ctx, farm, min_free] {
    if (!farm->farm.empty()) return run_farm_doctor(ctx, *farm);
    if (!farm->boards.empty() || !farm->tags.empty() || min_free->count() > 0)
      throw k3bench::UserError("--board/--tag/--min-free-mib: only with --farm");
    const std::string& root = ctx.root;
    std::vector<Check> checks = {
        tool("CMake", "cmake", "cmake"),
        tool("Ninja", "ninja", "ninja-build"),
        tool("host C++ compiler", "g++", "g++"),
        tool("git (source revision in provenance)", "git", "git"),
        file("Google Benchmark (host)", "/usr/include/benchmark/benchmark.h",
             "apt-get install -y libbenchmark-dev"),
        tool("riscv64 cross compiler (clang-16)", "clang++-16", "clang-16"),
        file("riscv64 sysroot", "/usr/riscv64-linux-gnu/include/stdio.h",
             "apt-get install -y g++-riscv64-linux-gnu"),
        file("Google Benchmark (riscv64)",
             root + "/build/third_party/riscv64/include/benchmark/benchmark.h",
             "bash " + root + "/scripts/build-riscv-deps.sh"),
        tool("qemu-user (riscv64)", "qemu-riscv64", "qemu-user"),
        file("OpenSSL (SHA-256 of runner binaries)", "/usr/include/openssl/evp.h",
             "apt-get install -y libssl-dev"),
        file("perf_event_open policy", "/proc/sys/kernel/perf_event_paranoid",
             "hardware counters need perf_event_paranoid <= 2", false),
    };
    std::map<std::string, k3targets::TargetConfig> targets;
    std::string targets_error;
    try {
      targets = k3targets::load_target_configs(ctx.targets_path());
    } catch (const std::exception& e) {
      targets_error = e.what();
    }
    if (!targets_error.empty()) checks.push_back({"targets file", false, "", targets_error});
    for (const auto& [name, tc] : targets) {
      auto t = k3targets::make_target(tc, root);
      const auto missing = t->missing();
      Check c{"target " + name, missing.empty(), t->describe(), "", false};
      for (const auto& m : missing) {
        const auto sep = m.find(" -- ");
        c.fix += (c.fix.empty() ? "" : "; ") + (sep == std::string::npos ? m : m.substr(sep + 4));
      }
      checks.push_back(c);
    }
    bool all_required = true;
    nlohmann::json out = nlohmann::json::array();
    for (const auto& c : checks) {
      all_required = all_required && (c.ok || !c.required);
      out.push_back({{"check", c.what},
                     {"ok", c.ok},
                     {"detail", c.detail},
                     {"required", c.required},
                     {"fix", c.ok ? "" : c.fix}});
      if (!ctx.json) {
        if (c.ok)
          fmt::print("ok       {:<40} {}\n", c.what, c.detail);
        else
          fmt::print("{} {:<40} fix: {}\n", c.required ? "MISSING " : "missing ", c.what, c.fix);
      }
    }
    if (ctx.json)
      std::cout << nlohmann::json{{"ok", all_required}, {"checks", out}}.dump(2) << "\n";
    if (!all_required) exit_code() = kProblems;
  });
}

}  // namespace k3cli
