#include "harness/host/farm/transport.h"

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include <fmt/format.h>

#include "harness/host/farm/background_process.h"
#include "harness/host/farm/shell_quote.h"

namespace k3farm {

using k3targets::last_line;
namespace fs = std::filesystem;
namespace {

bool contains(const std::string& text, const char* what) {
  return text.find(what) != std::string::npos;
}

class LocalTransport final : public Transport {
 public:
  std::vector<std::string> command(const std::vector<std::string>& argv, bool) const override {
    return argv;
  }
  k3targets::ProcessResult copy_to(const std::string& local, const std::string& remote,
                                   double timeout_s) const override {
    return exec({"cp", "--", local, remote}, timeout_s);
  }
  std::optional<std::string> connection_failure(const k3targets::ProcessResult&) const override {
    return std::nullopt;
  }
  std::string describe() const override { return "this machine"; }
};

class SshTransport final : public Transport {
 public:
  SshTransport(const FarmConfig& farm, const BoardConfig& board)
      : farm_(farm), board_(board), control_dir_(control_dir(farm)) {}

  std::vector<std::string> command(const std::vector<std::string>& argv,
                                   bool keep_stdin) const override {
    std::vector<std::string> cmd{farm_.ssh};
    if (!keep_stdin) cmd.push_back("-n");
    cmd.push_back("-T");
    append_options(cmd);
    cmd.insert(cmd.end(), {"-p", std::to_string(board_.port)});
    if (!board_.user.empty()) cmd.insert(cmd.end(), {"-l", board_.user});
    // "--" ends ssh's options, so nothing after the host is read as one; the command is one word
    // that the board's shell splits back into exactly `argv`.
    cmd.insert(cmd.end(), {"--", board_.host, shell_join(argv)});
    return cmd;
  }

  k3targets::ProcessResult copy_to(const std::string& local, const std::string& remote,
                                   double timeout_s) const override {
    // scp reads the remote path itself; the inventory restricts work_dir (and we add only hex
    // digits and fixed names) to characters no shell or scp path syntax treats specially.
    std::vector<std::string> cmd{farm_.scp, "-q"};
    append_options(cmd);
    cmd.insert(cmd.end(), {"-P", std::to_string(board_.port), "--", local});
    const std::string host =
        board_.host.find(':') != std::string::npos ? "[" + board_.host + "]" : board_.host;
    cmd.push_back((board_.user.empty() ? "" : board_.user + "@") + host + ":" + remote);
    return k3targets::run_process(cmd, k3targets::ProcessOptions::with_timeout(timeout_s));
  }

  std::optional<std::string> connection_failure(const k3targets::ProcessResult& r) const override {
    if (r.spawn_failed) return fmt::format("cannot run the ssh client: {}", last_line(r.err));
    if (r.timed_out) return std::nullopt;  // the caller decides: a slow command or a dead board
    if (r.exit_code != 255) return std::nullopt;  // the remote command's own status
    const std::string where = fmt::format("{}:{}", board_.host, board_.port);
    if (contains(r.err, "REMOTE HOST IDENTIFICATION HAS CHANGED"))
      return fmt::format(
          "host key of {} changed (does not match {}); refusing to connect, nothing ran", where,
          board_.known_hosts);
    if (contains(r.err, "host key is known") || contains(r.err, "Host key verification failed"))
      return fmt::format(
          "host key of {} is not in {} (unknown host); refusing to connect, nothing ran", where,
          board_.known_hosts);
    if (contains(r.err, "Permission denied"))
      return fmt::format("login to {} refused ({}); check identity {}", where, last_line(r.err),
                         board_.identity);
    const std::string line = last_line(r.err);
    return fmt::format("unreachable: {}", line.empty() ? "ssh exit 255" : line);
  }

  void close() const override {
    std::vector<std::string> cmd{farm_.ssh};
    append_options(cmd);
    cmd.insert(cmd.end(), {"-p", std::to_string(board_.port)});
    if (!board_.user.empty()) cmd.insert(cmd.end(), {"-l", board_.user});
    cmd.insert(cmd.end(), {"-O", "exit", "--", board_.host});
    k3targets::run_process(cmd, k3targets::ProcessOptions::with_timeout(10));
  }

  std::string describe() const override {
    return fmt::format("ssh {}{}:{}", board_.user.empty() ? "" : board_.user + "@", board_.host,
                       board_.port);
  }

 private:
  void append_options(std::vector<std::string>& cmd) const {
    if (!farm_.ssh_config.empty()) cmd.insert(cmd.end(), {"-F", farm_.ssh_config});
    auto opt = [&](const std::string& o) { cmd.insert(cmd.end(), {"-o", o}); };
    opt("BatchMode=yes");  // never prompt: a 3 a.m. job has nobody to answer
    opt("StrictHostKeyChecking=yes");
    opt("UserKnownHostsFile=" + board_.known_hosts);
    opt("GlobalKnownHostsFile=/dev/null");
    opt("UpdateHostKeys=no");
    opt("CheckHostIP=no");
    opt("IdentitiesOnly=yes");
    opt("IdentityFile=" + board_.identity);
    opt("ControlMaster=auto");
    // One master per board and controller process: a master shared between controllers would be
    // closed by whichever finishes first (close() below), cutting the other's sessions mid-run --
    // which would read as the board dropping off.
    opt(fmt::format("ControlPath={}/%C-{}", control_dir_, getpid()));
    opt(fmt::format("ControlPersist={}", static_cast<int>(farm_.control_persist_s)));
    opt(fmt::format("ConnectTimeout={}", static_cast<int>(farm_.connect_timeout_s)));
    opt("ServerAliveInterval=5");  // a board that dies mid-run is noticed within ~15 s
    opt("ServerAliveCountMax=3");
    opt("LogLevel=ERROR");
  }

  FarmConfig farm_;
  BoardConfig board_;
  std::string control_dir_;
};

}  // namespace

std::unique_ptr<HeldCommand> Transport::hold(const std::vector<std::string>& local_prefix,
                                             const std::vector<std::string>& argv) const {
  std::vector<std::string> local = local_prefix;
  for (auto& w : command(argv, true)) local.push_back(std::move(w));
  return std::make_unique<BackgroundProcess>(local);
}

std::string control_dir(const FarmConfig& farm) {
  std::string dir =
      farm.control_dir.empty() ? fmt::format("/tmp/k3tune-ssh-{}", getuid()) : farm.control_dir;
  std::error_code ec;
  fs::create_directories(dir, ec);
  ::chmod(dir.c_str(), 0700);  // sockets of live logins: ours only
  return dir;
}

std::unique_ptr<Transport> make_local_transport() {
  return std::make_unique<LocalTransport>();
}

std::unique_ptr<Transport> make_ssh_transport(const FarmConfig& farm, const BoardConfig& board) {
  return std::make_unique<SshTransport>(farm, board);
}

std::unique_ptr<Transport> make_transport(const FarmConfig& farm, const BoardConfig& board) {
  return board.kind == k3targets::TargetKind::kSsh ? make_ssh_transport(farm, board)
                                                   : make_local_transport();
}

}  // namespace k3farm
