// Runs a child process with captured stdout/stderr and a wall-clock timeout. The child gets its
// own process group so a timeout kills everything it started (qemu, a shell wrapper).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace k3targets {

struct ProcessResult {
  int exit_code = -1;  // valid when exited normally
  int signal = 0;      // non-zero when killed by a signal
  bool timed_out = false;
  bool spawn_failed = false;
  std::string out, err;
  std::int64_t wall_ns = 0;
  bool ok() const { return !timed_out && signal == 0 && !spawn_failed && exit_code == 0; }
  // One line saying why it did not succeed ("" when ok): timeout, signal, exit code + last stderr
  // line.
  std::string failure_reason(double timeout_s) const;
};

struct ProcessOptions {
  double timeout_s = 0;                // 0: no timeout
  std::optional<double> kill_after_s;  // test hook: SIGKILL the child after this long
  static ProcessOptions with_timeout(double seconds) { return {seconds, std::nullopt}; }
};

// The child runs in a process group of its own (so a timeout kills all it started); a signal to
// this process, or Ctrl-C at the terminal (which reaches only the foreground group), would not
// reach it. So every call makes sure that a handler for SIGINT, SIGTERM and SIGHUP runs first
// which kills the group of every child run_process has running, then lets the signal do what it
// did before (a handler installed earlier -- a farm command's lease release --, or the default:
// the process ends by that signal). A command that is ended thus ends its children (qemu
// processes of `k3tune count`, runners of a sweep, the steps of a nightly).
ProcessResult run_process(const std::vector<std::string>& argv, const ProcessOptions& opt);

// Forks and execs `argv` (PATH lookup) as the leader of a new process group, with the given
// descriptors as stdin/stdout/stderr (-1: inherited) and an empty signal mask. Returns the pid, or
// -1 when fork failed (errno set); exec failures exit the child with 127 and a message on stderr.
pid_t spawn_in_group(const std::vector<std::string>& argv, int in_fd, int out_fd, int err_fd);

// The last non-empty line of `text` (for one-line error messages from a tool's stderr).
std::string last_line(std::string text);

}  // namespace k3targets
