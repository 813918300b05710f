#include "harness/host/targets/target.h"

#include <filesystem>

#include <unistd.h>

#include <cstdlib>
#include <sstream>

#include <fmt/format.h>

#include "harness/host/targets/build_presets.h"

namespace k3targets {

bool on_path(const std::string& program) {
  if (program.find('/') != std::string::npos) return access(program.c_str(), X_OK) == 0;
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path ? path : "/usr/bin:/bin");
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    if (!dir.empty() && access((dir + "/" + program).c_str(), X_OK) == 0) return true;
  }
  return false;
}

bool is_qemu_prefix(const std::vector<std::string>& prefix) {
  if (prefix.empty()) return false;
  const std::string& first = prefix.front();
  const std::string base =
      first.substr(first.rfind('/') == std::string::npos ? 0 : first.rfind('/') + 1);
  return base.rfind("qemu-", 0) == 0;
}

Target::Target(TargetConfig config, std::string root)
    : config_(std::move(config)), root_(std::move(root)) {
  if (!config_.runner.empty()) {
    runner_path_ = config_.runner;
    return;
  }
  try {
    runner_path_ = variant_runner(root_, config_.variant);
  } catch (const PresetError& e) {
    runner_error_ = e.what();
  }
}

std::string Target::runner_path() const {
  if (!runner_error_.empty()) throw PresetError(runner_error_);
  return runner_path_;
}

ProcessResult Target::run_emulated(const std::vector<std::string>& emulator,
                                   const std::map<std::string, std::string>& env,
                                   const std::vector<std::string>& args,
                                   const ProcessOptions& opt) const {
  std::vector<std::string> argv{"env"};
  for (const auto& [k, v] : env) argv.push_back(k + "=" + v);
  argv.insert(argv.end(), emulator.begin(), emulator.end());
  argv.push_back(runner_path());
  argv.insert(argv.end(), args.begin(), args.end());
  return run_process(argv, opt);
}

std::unique_ptr<Target> Target::with_runner(const std::string& local_runner) const {
  TargetConfig c = config_;
  c.runner = local_runner;
  return make_target(c, root_);
}

std::string Target::place_file(const std::string& local_path) const {
  return runs_here() ? std::filesystem::absolute(local_path).string() : std::string();
}

std::vector<std::string> Target::missing() const {
  std::vector<std::string> out;
  if (access(runner_path().c_str(), X_OK) != 0) {
    out.push_back(
        fmt::format("runner {} -- k3tune build --variant {}", runner_path(), config_.variant));
  }
  return out;
}

namespace {

class LocalTarget final : public Target {
 public:
  using Target::Target;
  std::vector<std::string> command(const std::vector<std::string>& args) const override {
    std::vector<std::string> cmd{runner_path()};
    cmd.insert(cmd.end(), args.begin(), args.end());
    return cmd;
  }
  std::string describe() const override {
    return fmt::format("{}: local process, runner {}", name(), runner_path());
  }
};

class QemuTarget final : public Target {
 public:
  using Target::Target;
  std::vector<std::string> command(const std::vector<std::string>& args) const override {
    std::vector<std::string> cmd = emulator_prefix();
    cmd.push_back(runner_path());
    cmd.insert(cmd.end(), args.begin(), args.end());
    return cmd;
  }
  std::vector<std::string> emulator_prefix() const override {
    return {config_.qemu, "-cpu",
            fmt::format("rv64,v=true,vlen={},elen=64,vext_spec=v1.0", config_.vlen)};
  }
  std::string describe() const override {
    return fmt::format("{}: {} VLEN {}, runner {}", name(), config_.qemu, config_.vlen,
                       runner_path());
  }
  std::vector<std::string> missing() const override {
    auto out = Target::missing();
    if (!on_path(config_.qemu))
      out.push_back(fmt::format("{} -- apt-get install -y qemu-user", config_.qemu));
    return out;
  }
};

}  // namespace

const char* to_string(TargetKind kind) {
  switch (kind) {
    case TargetKind::kQemu:
      return "qemu";
    case TargetKind::kSsh:
      return "ssh";
    case TargetKind::kLocal:
      break;
  }
  return "local";
}

std::optional<TargetKind> target_kind(std::string_view text) {
  for (const auto k : {TargetKind::kLocal, TargetKind::kQemu, TargetKind::kSsh})
    if (text == to_string(k)) return k;
  return std::nullopt;
}

std::unique_ptr<Target> make_target(const TargetConfig& config, const std::string& root) {
  switch (config.kind) {
    case TargetKind::kLocal:
      return std::make_unique<LocalTarget>(config, root);
    case TargetKind::kQemu:
      return std::make_unique<QemuTarget>(config, root);
    case TargetKind::kSsh:
      break;
  }
  throw std::runtime_error(
      fmt::format("{}: targets.{}.kind: unknown kind '{}' (known: local, qemu)", config.defined_in,
                  config.name, to_string(config.kind)));
}

}  // namespace k3targets
