#include "harness/host/targets/process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <mutex>

#include <fmt/format.h>

namespace k3targets {
namespace {

using Clock = std::chrono::steady_clock;
constexpr double kPipeGraceAfterKillS = 2;
constexpr double kPipeGraceAfterExitS = 1;

void drain(int fd, std::string& into, bool& open) {
  char buf[65536];
  const ssize_t n = read(fd, buf, sizeof(buf));
  if (n > 0)
    into.append(buf, static_cast<std::size_t>(n));
  else if (n == 0 || (errno != EINTR && errno != EAGAIN))
    open = false;
}

// The process groups of the children run_process has running, for the signal handler: a fixed
// table of lock-free slots (a handler may take no lock), 0 when free.
constexpr int kMaxRunningChildren = 1024;
std::atomic<pid_t> g_running[kMaxRunningChildren];
std::atomic<bool> g_interrupted{false};
struct sigaction g_previous[3];
constexpr int kEndingSignals[3] = {SIGINT, SIGTERM, SIGHUP};

void kill_running_groups() {
  for (auto& slot : g_running)
    if (const pid_t pgid = slot.load(); pgid > 0) kill(-pgid, SIGKILL);
}

// Async-signal-safe: kill(2), sigaction(2) and raise(3) only.
void on_ending_signal(int sig) {
  g_interrupted.store(true);
  kill_running_groups();
  for (int i = 0; i < 3; ++i) {
    if (kEndingSignals[i] != sig) continue;
    const struct sigaction& before = g_previous[i];
    if (before.sa_handler != SIG_DFL && before.sa_handler != SIG_IGN &&
        before.sa_handler != nullptr) {
      if (before.sa_flags & SA_SIGINFO)
        before.sa_sigaction(sig, nullptr, nullptr);
      else
        before.sa_handler(sig);
      return;
    }
    if (before.sa_handler == SIG_IGN) return;
    sigaction(sig, &before, nullptr);  // the default: end this process by the same signal
    raise(sig);
  }
}

// Before every child: a handler installed since (a farm command's lease release, which ends the
// process from a thread of its own) becomes the one ours passes the signal on to, so that ours
// still runs first. An ignored signal stays ignored.
void end_children_on_signals() {
  static std::mutex mu;
  std::lock_guard lock(mu);
  for (int i = 0; i < 3; ++i) {
    struct sigaction current {};
    sigaction(kEndingSignals[i], nullptr, &current);
    if (current.sa_handler == on_ending_signal || current.sa_handler == SIG_IGN) continue;
    struct sigaction sa {};
    sa.sa_handler = on_ending_signal;
    sigemptyset(&sa.sa_mask);
    g_previous[i] = current;
    sigaction(kEndingSignals[i], &sa, nullptr);
  }
}

// Holds a running child's group in the table for the duration of its run.
class RunningGroup {
 public:
  explicit RunningGroup(pid_t pgid) {
    for (auto& s : g_running) {
      pid_t free = 0;
      if (s.compare_exchange_strong(free, pgid)) {
        slot_ = &s;
        break;
      }
    }
    // A signal between the fork and this registration found no group to kill.
    if (g_interrupted.load()) kill(-pgid, SIGKILL);
  }
  ~RunningGroup() {
    if (slot_ != nullptr) slot_->store(0);
  }
  RunningGroup(const RunningGroup&) = delete;
  RunningGroup& operator=(const RunningGroup&) = delete;

 private:
  std::atomic<pid_t>* slot_ = nullptr;
};

}  // namespace

std::string last_line(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.pop_back();
  const auto nl = s.rfind('\n');
  return nl == std::string::npos ? s : s.substr(nl + 1);
}

pid_t spawn_in_group(const std::vector<std::string>& argv, int in_fd, int out_fd, int err_fd) {
  const pid_t pid = fork();
  if (pid != 0) {
    if (pid > 0) setpgid(pid, pid);  // also from the parent: no race with a kill of the group
    return pid;
  }
  setpgid(0, 0);
  sigset_t none;  // a caller that waits for signals blocks them; its children must not inherit that
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  if (in_fd >= 0) dup2(in_fd, STDIN_FILENO);
  if (out_fd >= 0) dup2(out_fd, STDOUT_FILENO);
  if (err_fd >= 0) dup2(err_fd, STDERR_FILENO);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  execvp(args[0], args.data());
  const std::string msg = fmt::format("{}: {}\n", argv[0], std::strerror(errno));
  (void)!write(STDERR_FILENO, msg.data(), msg.size());
  _exit(127);
}

std::string ProcessResult::failure_reason(double timeout_s) const {
  if (ok()) return "";
  if (spawn_failed) return "could not start: " + last_line(err);
  if (timed_out) return fmt::format("timeout: no exit after {:g} s (killed)", timeout_s);
  if (signal != 0) return fmt::format("killed by signal {} ({})", signal, strsignal(signal));
  const std::string line = last_line(err);
  return fmt::format("exit code {}{}{}", exit_code, line.empty() ? "" : ": ", line);
}

ProcessResult run_process(const std::vector<std::string>& argv, const ProcessOptions& opt) {
  ProcessResult r;
  int out_pipe[2], err_pipe[2];
  if (pipe2(out_pipe, O_CLOEXEC) != 0 || pipe2(err_pipe, O_CLOEXEC) != 0) {
    r.spawn_failed = true;
    r.err = std::string("pipe: ") + std::strerror(errno);
    return r;
  }
  end_children_on_signals();
  const auto start = Clock::now();
  const pid_t pid = spawn_in_group(argv, -1, out_pipe[1], err_pipe[1]);
  close(out_pipe[1]);
  close(err_pipe[1]);
  if (pid < 0) {
    close(out_pipe[0]);
    close(err_pipe[0]);
    r.spawn_failed = true;
    r.err = std::string("fork: ") + std::strerror(errno);
    return r;
  }
  const RunningGroup running(pid);
  bool out_open = true, err_open = true, killed = false, exited = false;
  double killed_at = 0, exited_at = 0;
  int status = 0;
  while (out_open || err_open) {
    const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
    if (!killed && opt.kill_after_s && elapsed >= *opt.kill_after_s) {
      kill(-pid, SIGKILL);
      killed = true;
      killed_at = elapsed;
    }
    if (!killed && !exited && opt.timeout_s > 0 && elapsed >= opt.timeout_s) {
      kill(-pid, SIGKILL);
      killed = true;
      killed_at = elapsed;
      r.timed_out = true;
    }
    // Killed, yet the pipes stay open: a process outside the group holds them (an ssh client
    // hands its stdio to the shared ControlMaster connection). Stop waiting for their end.
    if (killed && elapsed - killed_at >= kPipeGraceAfterKillS) break;
    // The child exited but something it started still holds the pipes (a persisted ssh
    // ControlMaster that kept its parent's stdio, a daemon): what the child wrote has arrived by
    // now; waiting for the holder would turn a finished command into a timeout.
    if (!exited && waitpid(pid, &status, WNOHANG) == pid) {
      exited = true;
      exited_at = elapsed;
      r.wall_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - start).count();
    }
    if (exited && elapsed - exited_at >= kPipeGraceAfterExitS) break;
    double wait_s = exited ? 0.05 : 0.5;
    if (opt.timeout_s > 0) wait_s = std::min(wait_s, std::max(0.0, opt.timeout_s - elapsed));
    if (opt.kill_after_s) wait_s = std::min(wait_s, std::max(0.0, *opt.kill_after_s - elapsed));
    pollfd fds[2] = {{out_open ? out_pipe[0] : -1, POLLIN, 0},
                     {err_open ? err_pipe[0] : -1, POLLIN, 0}};
    const int n = poll(fds, 2, static_cast<int>(wait_s * 1000) + 1);
    if (n < 0 && errno != EINTR) break;
    if (out_open && (fds[0].revents & (POLLIN | POLLHUP | POLLERR)))
      drain(out_pipe[0], r.out, out_open);
    if (err_open && (fds[1].revents & (POLLIN | POLLHUP | POLLERR)))
      drain(err_pipe[0], r.err, err_open);
  }
  close(out_pipe[0]);
  close(err_pipe[0]);
  // Both pipes are closed; the child normally exits now, but one that closed its output and kept
  // running is still subject to the timeout. An exiting process closes its files a moment before
  // it can be reaped: the first waits are short (a fixed 2 ms added that much to every runner
  // process's wall time), the later ones back off.
  for (useconds_t pause_us = 20; !exited; pause_us = std::min<useconds_t>(2 * pause_us, 2000)) {
    const pid_t w = waitpid(pid, &status, WNOHANG);
    if (w == pid || (w < 0 && errno != EINTR)) break;
    const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
    if (!killed && opt.timeout_s > 0 && elapsed >= opt.timeout_s) {
      kill(-pid, SIGKILL);
      killed = true;
      r.timed_out = true;
    }
    usleep(pause_us);
  }
  if (r.wall_ns == 0)
    r.wall_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - start).count();
  if (WIFEXITED(status)) {
    r.exit_code = WEXITSTATUS(status);
    if (r.exit_code == 127 && r.out.empty()) r.spawn_failed = true;
  } else if (WIFSIGNALED(status)) {
    r.signal = WTERMSIG(status);
  }
  return r;
}

}  // namespace k3targets
