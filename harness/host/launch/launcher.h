// Starts k3tune as a child: the one place a k3tune command line is put together. The globals
// (source root, database, targets file, output mode) come from the launcher, the subcommand's
// arguments from a typed request (k3tune_request.h).
#pragma once

#include <map>
#include <string>

#include "harness/host/launch/k3tune_request.h"

namespace k3launch {

struct Launcher {
  std::string self_exe;        // the k3tune binary
  std::string root;            // --root
  std::string db_path{};       // --db ("" : the child's default, $K3TUNE_DB or <root>/results)
  std::string targets_file{};  // --targets ("" : <root>/configs/targets.toml)
  bool quiet = true;           // -q: no progress line (a child's stderr is a log)
  // --json for a child whose subcommand is not a typed request (a Slurm task re-running its
  // caller's command); a typed request sets it itself where its child prints a JSON form.
  bool json = false;

  // k3tune and its global options, without a subcommand (a Slurm batch script appends the
  // subcommand its task runs).
  Args globals() const;
  // The whole command line of `request`'s child.
  Args argv(const Request& request) const;
  // The globals as shell words for a batch script whose database is a shell expression (a Slurm
  // task's own, named by its array and task ids), left unquoted so the shell expands it: the
  // task's process shows its database on its command line.
  std::string shell_globals(const std::string& db_expression) const;
};

// "k3tune <arguments>": how a step's command is shown and recorded (the globals are the
// launcher's, the same for every step).
std::string command_text(const Request& request);

// Where a child's output goes: stdout to `out_path` (truncated), stderr appended to `log_path`.
struct ChildFiles {
  std::string out_path, log_path;
};

// Runs `argv` in this process group (a kill of the caller takes the child with it), with `env`
// set for it. Returns the exit code (128 + signal when killed; 127 when it could not start).
// Throws UserError naming `log_path` when a file cannot be written.
int run_child(const Args& argv, const ChildFiles& files,
              const std::map<std::string, std::string>& env = {});

}  // namespace k3launch
