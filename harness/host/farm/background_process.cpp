#include "harness/host/farm/background_process.h"

#include "harness/common/sys/elapsed.h"
#include "harness/host/targets/process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <stdexcept>

#include <fmt/format.h>

namespace k3farm {
namespace {

using Clock = std::chrono::steady_clock;
using k3sys::seconds_since;

}  // namespace

BackgroundProcess::BackgroundProcess(const std::vector<std::string>& argv) {
  int in[2], out[2], err[2];
  if (pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0)
    throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
  pid_ = k3targets::spawn_in_group(argv, in[0], out[1], err[1]);
  close(in[0]);
  close(out[1]);
  close(err[1]);
  if (pid_ < 0) {
    close(in[1]);
    close(out[0]);
    close(err[0]);
    throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
  }
  in_fd_ = in[1];
  out_fd_ = out[0];
  err_fd_ = err[0];
  fcntl(err_fd_, F_SETFL, fcntl(err_fd_, F_GETFL) | O_NONBLOCK);
}

BackgroundProcess::~BackgroundProcess() {
  stop(5);
  if (out_fd_ >= 0) close(out_fd_);
  if (err_fd_ >= 0) close(err_fd_);
}

std::optional<std::string> BackgroundProcess::read_line(double timeout_s) {
  const auto start = Clock::now();
  for (;;) {
    const auto nl = out_buf_.find('\n');
    if (nl != std::string::npos) {
      std::string line = out_buf_.substr(0, nl);
      out_buf_.erase(0, nl + 1);
      return line;
    }
    if (out_fd_ < 0) return std::nullopt;
    const double left = timeout_s - seconds_since(start);
    if (left <= 0) return std::nullopt;
    pollfd p{out_fd_, POLLIN, 0};
    const int n = poll(&p, 1, static_cast<int>(left * 1000) + 1);
    if (n < 0 && errno != EINTR) return std::nullopt;
    if (n <= 0) continue;
    char buf[4096];
    const ssize_t got = read(out_fd_, buf, sizeof(buf));
    if (got > 0) {
      out_buf_.append(buf, static_cast<std::size_t>(got));
    } else if (got == 0 || (errno != EINTR && errno != EAGAIN)) {
      close(out_fd_);
      out_fd_ = -1;
    }
  }
}

const std::string& BackgroundProcess::stderr_text() {
  if (err_fd_ >= 0) {
    char buf[4096];
    for (;;) {
      const ssize_t got = read(err_fd_, buf, sizeof(buf));
      if (got > 0) {
        err_buf_.append(buf, static_cast<std::size_t>(got));
        continue;
      }
      if (got == 0) {
        close(err_fd_);
        err_fd_ = -1;
      }
      break;
    }
  }
  return err_buf_;
}

void BackgroundProcess::reap(bool block) {
  if (pid_ <= 0 || status_ >= 0) return;
  int st = 0;
  const pid_t w = waitpid(pid_, &st, block ? 0 : WNOHANG);
  if (w == pid_) status_ = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

bool BackgroundProcess::running() {
  reap(false);
  return pid_ > 0 && status_ < 0;
}

void BackgroundProcess::stop(double grace_s) {
  if (in_fd_ >= 0) {
    close(in_fd_);
    in_fd_ = -1;
  }
  if (pid_ <= 0) return;
  const auto start = Clock::now();
  while (running() && seconds_since(start) < grace_s) usleep(10000);
  if (running()) {
    kill(-pid_, SIGKILL);
    reap(true);
  }
  stderr_text();
}

}  // namespace k3farm
