// How commands reach a board. Everything sent is an argv vector: a local board executes it
// directly; an ssh board gets it as one command line in which every word is single-quoted
// (shell_quote.h), so the board's shell never interprets a word we pass. A transport is made per
// board by a TransportFactory: the inventory's kind by default; a test double (an in-process fake
// board) where a test injects one.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "harness/host/farm/held_command.h"
#include "harness/host/farm/inventory.h"
#include "harness/host/targets/process.h"

namespace k3farm {

class Transport {
 public:
  virtual ~Transport() = default;
  // The local command line that runs `argv` on the board. `keep_stdin`: the command reads our
  // stdin (the lease holder); otherwise the board side sees an empty stdin.
  virtual std::vector<std::string> command(const std::vector<std::string>& argv,
                                           bool keep_stdin = false) const = 0;
  // Runs `argv` on the board and waits for it (at most `timeout_s`).
  virtual k3targets::ProcessResult exec(const std::vector<std::string>& argv,
                                        double timeout_s) const {
    return k3targets::run_process(command(argv),
                                  k3targets::ProcessOptions::with_timeout(timeout_s));
  }
  // Starts `argv` on the board, reading our stdin, and keeps it running (the lease holder);
  // `local_prefix` (a reservation command) wraps it on this machine. Throws std::runtime_error
  // when this machine cannot start it.
  virtual std::unique_ptr<HeldCommand> hold(const std::vector<std::string>& local_prefix,
                                            const std::vector<std::string>& argv) const;
  // Copies a local file to `remote_path` on the board (its directory exists).
  virtual k3targets::ProcessResult copy_to(const std::string& local_path,
                                           const std::string& remote_path,
                                           double timeout_s) const = 0;
  // When `r` failed because the board could not be reached or refused us (not because the command
  // failed): one line saying why. Host-key problems read "host key ...".
  virtual std::optional<std::string> connection_failure(
      const k3targets::ProcessResult& r) const = 0;
  // Closes a shared connection, if any (the next command opens a new one, checking the host key).
  virtual void close() const {}
  virtual std::string describe() const = 0;
};

using TransportFactory =
    std::function<std::unique_ptr<Transport>(const FarmConfig&, const BoardConfig&)>;
// The inventory's transport for `board`: ssh or local by its kind.
std::unique_ptr<Transport> make_transport(const FarmConfig& farm, const BoardConfig& board);

// kind = "local": this machine.
std::unique_ptr<Transport> make_local_transport();
// kind = "ssh": the farm's OpenSSH client with connection reuse and strict host-key checking.
std::unique_ptr<Transport> make_ssh_transport(const FarmConfig& farm, const BoardConfig& board);

// The directory of ControlMaster sockets: farm.control_dir or /tmp/k3tune-ssh-<uid> (mode 0700).
std::string control_dir(const FarmConfig& farm);

}  // namespace k3farm
