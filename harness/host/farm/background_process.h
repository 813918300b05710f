// A child process that outlives one call: the lease holder. Its stdin is a pipe we keep open;
// closing it (or our death, which closes it too) tells the holder to let go. Its stdout is read
// line by line with a deadline. The child runs in its own process group.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

#include "harness/host/farm/held_command.h"

namespace k3farm {

class BackgroundProcess final : public HeldCommand {
 public:
  explicit BackgroundProcess(const std::vector<std::string>& argv);  // throws on spawn failure
  ~BackgroundProcess() override;                                     // stop(5)
  BackgroundProcess(const BackgroundProcess&) = delete;
  BackgroundProcess& operator=(const BackgroundProcess&) = delete;

  pid_t pid() const { return pid_; }
  // The next stdout line, or nullopt at EOF or after `timeout_s`.
  std::optional<std::string> read_line(double timeout_s) override;
  // Everything the child wrote to stderr so far (drained without blocking).
  const std::string& stderr_text() override;
  // Whether the child has not exited yet (reaps it if it has).
  bool running() override;
  // Exit status once exited (-1 while running; 128+N when killed by signal N).
  int exit_status() const override { return status_; }
  // Closes stdin, waits up to `grace_s` for the child to exit, then kills its process group.
  void stop(double grace_s) override;

 private:
  void reap(bool block);
  pid_t pid_ = -1;
  int in_fd_ = -1, out_fd_ = -1, err_fd_ = -1;
  std::string out_buf_, err_buf_;
  int status_ = -1;
};

}  // namespace k3farm
