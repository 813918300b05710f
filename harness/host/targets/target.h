// The target interface: where and how a k3bench runner process runs. `local` runs the host build,
// `qemu` runs a riscv64 build under qemu-user with a chosen VLEN; a farm board
// (harness/host/farmbench, over SSH) implements the same interface: the runner deployed once by
// build hash, run remotely with a board-side timeout.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "harness/host/targets/process.h"

namespace k3targets {

// Where a runner runs: this machine, qemu-user on this machine, or a board over SSH (a farm board
// of kind "local" is this machine). The text is the targets file's and the inventory's `kind`.
enum class TargetKind { kLocal, kQemu, kSsh };
const char* to_string(TargetKind kind);                   // "local", "qemu", "ssh"
std::optional<TargetKind> target_kind(std::string_view);  // nullopt: none of them

struct TargetConfig {
  std::string name;
  TargetKind kind = TargetKind::kLocal;
  std::string variant;  // build variant whose runner it uses: "host" | "rvv"
  std::string runner;   // explicit runner path; empty: the runner of preset `variant`
  std::string qemu = "qemu-riscv64";
  int vlen = 256;          // qemu only
  double timeout_s = 300;  // per runner process
  std::string defined_in;  // file:line, for messages
};

class Target {
 public:
  // Resolves the runner of config.variant (CMakePresets.json) once, here: command() needs it for
  // every runner process. A variant the presets lack is reported by runner_path().
  Target(TargetConfig config, std::string root);
  virtual ~Target() = default;
  const TargetConfig& config() const { return config_; }
  const std::string& name() const { return config_.name; }
  // Path of the runner binary on this machine (the one hashed as the build identity).
  std::string runner_path() const;
  // The command line that runs the runner with `args` on this target.
  virtual std::vector<std::string> command(const std::vector<std::string>& args) const = 0;
  // One line describing the target (for logs and `probe`).
  virtual std::string describe() const = 0;
  // Things missing to use this target, each "what -- how to fix" (empty: ready).
  virtual std::vector<std::string> missing() const;
  // Runs the runner with `args`. Farm boards override it: deploy state, board-side timeout.
  virtual ProcessResult run(const std::vector<std::string>& args, const ProcessOptions& opt) const {
    return run_process(command(args), opt);
  }
  // The emulator command the runner runs under (qemu-user and its options: a qemu target's, or a
  // farm board's exec prefix when that is qemu-user); empty when the runner runs natively. An
  // instruction count runs the same runner under this prefix with the counting plugin added.
  virtual std::vector<std::string> emulator_prefix() const { return {}; }
  // Runs the runner under `emulator` (instead of emulator_prefix()) with `env` added: the local
  // process here; a farm board runs it on the board, judged like any of its runs.
  virtual ProcessResult run_emulated(const std::vector<std::string>& emulator,
                                     const std::map<std::string, std::string>& env,
                                     const std::vector<std::string>& args,
                                     const ProcessOptions& opt) const;
  // Under qemu-user: wall time there says nothing about a board.
  bool emulated() const { return !emulator_prefix().empty(); }
  // Whether the runner runs on this machine (a path given to it, a trace it writes, are here).
  bool runs_here() const { return config().kind != TargetKind::kSsh; }
  // The same place running another runner binary (a baseline for a paired A/B): a target of the
  // same configuration; a farm board installs that runner on the board next to its own.
  virtual std::unique_ptr<Target> with_runner(const std::string& local_runner) const;
  // A file the runner opens (another build's kernel plugin), placed where the runner runs: its path
  // there. Local and qemu targets use it in place; a farm board installs it by its SHA-256 next to
  // its runners; a plain ssh target cannot be handed one ("": the caller does without).
  virtual std::string place_file(const std::string& local_path) const;
  // Why this target can no longer measure (a farm board taken out of the run); "" while it can.
  virtual std::string lost() const { return {}; }

 protected:
  TargetConfig config_;
  std::string root_;

 private:
  std::string runner_path_;   // resolved at construction
  std::string runner_error_;  // why the variant has no runner (PresetError's message)
};

// Thrown by a measurement whose target was lost (a farm board quarantined mid-command): what was
// measured before is stored; the command says how to continue.
struct TargetLost : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Whether an exec prefix runs its command under qemu-user (its first word is qemu-<arch>).
bool is_qemu_prefix(const std::vector<std::string>& prefix);

std::unique_ptr<Target> make_target(const TargetConfig& config, const std::string& root);

// Loads [targets.NAME] tables from a TOML file. Throws std::runtime_error with "file:line: key:
// what".
std::map<std::string, TargetConfig> load_target_configs(const std::string& path);

// Whether `program` is found on PATH (or is an executable path).
bool on_path(const std::string& program);

}  // namespace k3targets
