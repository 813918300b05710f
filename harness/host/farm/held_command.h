// A command kept running on a board for as long as we hold it: the lease holder (lease.h). Over
// SSH it is a local child process (background_process.h) whose stdin we keep open; a transport
// test double answers it in-process.
#pragma once

#include <optional>
#include <string>

namespace k3farm {

class HeldCommand {
 public:
  virtual ~HeldCommand() = default;
  // The next line the command printed, or nullopt at its end or after `timeout_s`.
  virtual std::optional<std::string> read_line(double timeout_s) = 0;
  // Everything it wrote to stderr so far.
  virtual const std::string& stderr_text() = 0;
  // Whether it has not ended yet.
  virtual bool running() = 0;
  // Its exit status once ended (-1 while running; 128+N when killed by signal N).
  virtual int exit_status() const = 0;
  // Lets go (closes its stdin), waits up to `grace_s` for it to end, then kills it.
  virtual void stop(double grace_s) = 0;
};

}  // namespace k3farm
