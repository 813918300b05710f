// A real board farm on loopback for the farm tests: one OpenSSH sshd per board (Debian's
// openssh-server, started by the test on 127.0.0.1 with its own host key, config, pid file and
// authorized_keys), a user key, a known_hosts file, and a farm file whose boards run the real
// dynamically linked riscv64 k3bench under qemu-user at VLEN 1024.
#pragma once

#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pwd.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "harness/host/targets/process.h"

namespace k3farm_test {

namespace fs = std::filesystem;

inline std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

inline void write_file(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f << text;
  if (!f) throw std::runtime_error("cannot write " + path);
}

// A private temporary directory (mkdtemp: letters and digits only, so it passes the inventory's
// work_dir rules), removed with everything under it.
class TempDir {
 public:
  TempDir() {
    std::string tmpl = "/tmp/k3farmtestXXXXXX";
    if (mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }
  std::string operator/(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// The farm tests' quick fixed count: 2 processes of 2 repetitions, no CI target, each repetition
// at least `min_time` seconds.
inline std::vector<std::string> quick_measure(const std::string& min_time) {
  return {"-P", "2", "--target-ci", "0", "-R", "2", "--min-time", min_time};
}

// Six tiny decode cells: three shapes, each with one and two workers.
inline std::vector<std::string> six_decode_cells() {
  return {"--op",        "linear_decode", "--shape",    "n=96,k=256", "--shape",
          "n=128,k=256", "--shape",       "n=64,k=128", "--grid",     "workers=1,2"};
}

// `argv` with `more` appended.
inline std::vector<std::string> with_args(std::vector<std::string> argv,
                                          const std::vector<std::string>& more) {
  argv.insert(argv.end(), more.begin(), more.end());
  return argv;
}

inline void run_or_throw(const std::vector<std::string>& argv) {
  const auto r = k3targets::run_process(argv, k3targets::ProcessOptions::with_timeout(60));
  if (!r.ok()) throw std::runtime_error(argv[0] + ": " + r.failure_reason(60) + " " + r.err);
}

inline int free_loopback_port() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a));
  socklen_t len = sizeof(a);
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  close(fd);
  return ntohs(a.sin_port);
}

inline bool port_accepts(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(static_cast<uint16_t>(port));
  const bool ok = connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0;
  close(fd);
  return ok;
}

// Parent pid of every process (from /proc), for finding what a board's sshd started.
inline std::map<pid_t, pid_t> parent_pids() {
  std::map<pid_t, pid_t> out;
  for (const auto& e : fs::directory_iterator("/proc")) {
    const std::string name = e.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    const std::string stat = read_file(e.path().string() + "/stat");
    const auto close = stat.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream in(stat.substr(close + 2));
    std::string state;
    pid_t ppid = 0;
    in >> state >> ppid;
    out[std::stoi(name)] = ppid;
  }
  return out;
}

inline std::vector<pid_t> descendants(pid_t root) {
  const auto parents = parent_pids();
  std::set<pid_t> found{root};
  for (bool grew = true; grew;) {
    grew = false;
    for (const auto& [pid, ppid] : parents)
      if (found.count(ppid) && !found.count(pid)) grew = found.insert(pid).second;
  }
  found.erase(root);
  return {found.begin(), found.end()};
}

// Processes whose command line mentions `needle` (e.g. a board's work directory).
inline std::vector<pid_t> processes_mentioning(const std::string& needle) {
  std::vector<pid_t> out;
  for (const auto& e : fs::directory_iterator("/proc")) {
    const std::string name = e.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::string cmd = read_file(e.path().string() + "/cmdline");
    for (auto& c : cmd)
      if (c == '\0') c = ' ';
    if (cmd.find(needle) != std::string::npos && std::stoi(name) != getpid())
      out.push_back(std::stoi(name));
  }
  return out;
}

// The process plan of the farm tests' tiny decode cells: 2 processes, no CI target, no warm-up.
inline std::vector<std::string> tiny_process_plan() {
  return {"-P", "2", "--target-ci", "0", "--warmup", "0"};
}

// `k3tune bench --farm FARM` over tiny decode cells under qemu, one cell per probe: the sweep the
// farm tests run; `extra` adds shapes, grids, timeouts, flags.
inline std::vector<std::string> tiny_farm_sweep_args(const std::string& farm_file,
                                                     const std::vector<std::string>& extra) {
  auto args = with_args({"--json", "bench", "--farm", farm_file, "--op", "linear_decode",
                         "--params", "workers=1,copies=1"},
                        tiny_process_plan());
  args.insert(args.end(), {"--cells-per-probe", "1"});
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

// "b1", "b2", ... (appended rather than "b" + to_string(): GCC 12 warns falsely on that form).
inline std::string fmt_board(std::size_t i) {
  std::string name = std::to_string(i);
  name.insert(name.begin(), 'b');
  return name;
}

inline std::string user_name() {
  const passwd* pw = getpwuid(getuid());
  return pw ? pw->pw_name : "root";
}

// One loopback "board": an sshd on its own port with its own host key.
class Sshd {
 public:
  Sshd(const std::string& dir, const std::string& authorized_keys) : dir_(dir) {
    fs::create_directories(dir_);
    keys_ = authorized_keys;
    new_host_key();
  }
  ~Sshd() { kill_all(); }

  int port() const { return port_; }
  pid_t pid() const { return pid_; }
  std::string known_hosts_line() const {
    std::string pub = read_file(dir_ + "/host_ed25519.pub");
    pub = pub.substr(0, pub.find(' ', pub.find(' ') + 1));  // "ssh-ed25519 AAAA..."
    return "[127.0.0.1]:" + std::to_string(port_) + " " + pub + "\n";
  }

  void new_host_key() {
    fs::remove(dir_ + "/host_ed25519");
    fs::remove(dir_ + "/host_ed25519.pub");
    run_or_throw({"ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "k3farm-test-host", "-f",
                  dir_ + "/host_ed25519"});
  }

  // Starts sshd (on the same port as before, when restarted) and waits until it accepts.
  void start() {
    if (getuid() == 0) fs::create_directories("/run/sshd");  // privilege separation directory
    for (int attempt = 0; attempt < 5; ++attempt) {
      if (port_ == 0 || attempt > 0) port_ = free_loopback_port();
      write_file(dir_ + "/sshd_config", config());
      pid_ = fork();
      if (pid_ == 0) {
        setpgid(0, 0);
        const int log = ::open((dir_ + "/sshd.log").c_str(), O_WRONLY | O_CREAT | O_APPEND, 0600);
        if (log >= 0) dup2(log, STDERR_FILENO);  // sshd -e logs there, not into the test output
        execl("/usr/sbin/sshd", "/usr/sbin/sshd", "-D", "-e", "-f", (dir_ + "/sshd_config").c_str(),
              static_cast<char*>(nullptr));
        _exit(127);
      }
      const auto start = std::chrono::steady_clock::now();
      while (std::chrono::steady_clock::now() - start < std::chrono::seconds(10)) {
        int st = 0;
        if (waitpid(pid_, &st, WNOHANG) == pid_) break;  // exited: port taken? try another
        if (port_accepts(port_)) return;
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      }
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
      pid_ = -1;
    }
    throw std::runtime_error("sshd did not start (see " + dir_ + "/sshd_config)");
  }

  // The board dies: the listener and every process it started (sessions, shells, runners).
  void kill_all() {
    if (pid_ <= 0) return;
    const auto children = descendants(pid_);
    kill(pid_, SIGKILL);
    for (pid_t c : children) kill(c, SIGKILL);
    waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }

 private:
  std::string config() const {
    std::ostringstream c;
    c << "Port " << port_ << "\nListenAddress 127.0.0.1\n"
      << "HostKey " << dir_ << "/host_ed25519\n"
      << "PidFile " << dir_ << "/sshd.pid\n"
      << "AuthorizedKeysFile " << keys_ << "\n"
      << "PermitRootLogin prohibit-password\nPubkeyAuthentication yes\n"
      << "PasswordAuthentication no\nKbdInteractiveAuthentication no\nUsePAM no\n"
      << "StrictModes no\nMaxSessions 64\nMaxStartups 64\nLogLevel ERROR\n"
      // Debian's bash sources ~/.bashrc for a command sshd runs when it is the top-level shell
      // (SHLVL unset). The developer's ~/.bashrc is not the board's: on a machine whose rc runs
      // `pyenv rehash` (a lock, polled every 0.1 s) concurrent board commands stalled for tens of
      // seconds and missed their deadlines. SHLVL=1 makes the command's shell level 2.
      << "SetEnv SHLVL=1\n"
      << "Subsystem sftp internal-sftp\n";
    return c.str();
  }
  std::string dir_, keys_;
  int port_ = 0;
  pid_t pid_ = -1;
};

// The whole loopback farm: user key, N boards, known_hosts, farm file.
class LoopbackFarm {
 public:
  explicit LoopbackFarm(int boards) {
    run_or_throw({"ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "k3farm-test-user", "-f",
                  tmp_ / "user_ed25519"});
    fs::copy_file(tmp_ / "user_ed25519.pub", tmp_ / "authorized_keys");
    for (int i = 1; i <= boards; ++i) {
      sshd_.push_back(
          std::make_unique<Sshd>(tmp_ / ("sshd-b" + std::to_string(i)), tmp_ / "authorized_keys"));
      sshd_.back()->start();
    }
    write_known_hosts();
  }

  const TempDir& dir() const { return tmp_; }
  Sshd& sshd(int board) { return *sshd_.at(board - 1); }
  std::string work_dir(const std::string& board) const { return tmp_ / ("board-" + board); }
  std::string known_hosts() const { return tmp_ / "known_hosts"; }
  std::string control_dir() const { return tmp_ / "ctl"; }

  void write_known_hosts(const std::set<int>& leave_out = {}) {
    std::string text;
    for (std::size_t i = 0; i < sshd_.size(); ++i)
      if (!leave_out.count(static_cast<int>(i + 1))) text += sshd_[i]->known_hosts_line();
    write_file(known_hosts(), text);
  }

  // A farm file: boards b1..bN, plus `extra` TOML appended (more boards, overrides).
  std::string write_farm(const std::string& runner, const std::string& extra = "",
                         const std::string& farm_extra = "") const {
    std::ostringstream f;
    f << "[farm]\nname = \"loopback\"\nknown_hosts = \"known_hosts\"\ncontrol_dir = \""
      << control_dir() << "\"\nconnect_timeout_s = 5\nmax_timeouts = 2\n"
      << farm_extra << "\n[defaults]\nkind = \"ssh\"\nhost = \"127.0.0.1\"\nuser = \""
      << user_name() << "\"\nidentity = \"user_ed25519\"\nrunner = \"" << runner
      << "\"\nvariant = \"rvv-dynamic\"\ntimeout_s = 300\ntags = [\"qemu\", \"vlen1024\"]\n"
      << "exec_prefix = [\"qemu-riscv64\", \"-L\", \"/usr/riscv64-linux-gnu\", \"-cpu\", "
         "\"rv64,v=true,vlen=1024,elen=64,vext_spec=v1.0\"]\n";
    for (std::size_t i = 0; i < sshd_.size(); ++i) {
      const std::string name = fmt_board(i + 1);
      f << "\n[boards." << name << "]\nport = " << sshd_[i]->port() << "\nwork_dir = \""
        << work_dir(name) << "\"\ntest_hooks = true\n";
    }
    f << extra;
    const std::string path = tmp_ / "farm.toml";
    write_file(path, f.str());
    return path;
  }

 private:
  TempDir tmp_;
  std::vector<std::unique_ptr<Sshd>> sshd_;
};

// A test on a two-board loopback farm running K3_FARM_RISCV_RUNNER, with k3tune run against the
// farm's database (or another one).
class LoopbackFarmTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(fs::exists(K3_FARM_RISCV_RUNNER)) << K3_FARM_RISCV_RUNNER << " missing";
    lab_ = std::make_unique<LoopbackFarm>(2);
    farm_file_ = lab_->write_farm(K3_FARM_RISCV_RUNNER);
  }
  std::string db() const { return lab_->dir() / "results.db"; }
  struct Cmd {
    int code;
    std::string out, err;
  };
  Cmd run_k3tune(const std::vector<std::string>& args, const std::string& db_path = "") const {
    std::vector<std::string> argv{K3TUNE_PATH, "--root", K3TUNE_ROOT, "--db",
                                  db_path.empty() ? db() : db_path};
    argv.insert(argv.end(), args.begin(), args.end());
    const auto r = k3targets::run_process(argv, k3targets::ProcessOptions::with_timeout(900));
    return {r.signal ? 128 + r.signal : r.exit_code, r.out, r.err};
  }
  std::unique_ptr<LoopbackFarm> lab_;
  std::string farm_file_;
};

}  // namespace k3farm_test
