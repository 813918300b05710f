// The farm inventory: which boards exist and how to reach them (configs/farm*.toml), plus the
// built-in local farm that needs no file. Parsing validates everything it can without touching a
// board; errors are one line "file:line: key: what" and nothing is written.
//
// Board kinds:
//   ssh   -- a machine reached with the OpenSSH client (a K3 board, or a loopback sshd in tests);
//   local -- this machine; with an exec prefix (qemu-user) it stands in for a riscv64 board.
// The exec prefix runs the runner (e.g. "qemu-riscv64 -cpu rv64,v=true,vlen=1024,..."); it is
// empty on a real board.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "harness/host/farm/scheduler_config.h"
#include "harness/host/targets/target.h"

namespace k3farm {

// A board's outlet on the lab's power distribution unit, switched through pdudaemon's HTTP
// listener (GET <daemon>/power/control/reboot?hostname=<name>&port=<outlet>&delay=<delay_s>).
struct PduOutlet {
  std::string daemon;       // "http://host:port" of pdudaemon's listener
  std::string name;         // the PDU's name in pdudaemon's configuration
  int outlet = -1;          // the board's port on that PDU (-1: not given)
  double delay_s = 5;       // off for this long before it is switched on again
  double ssh_wait_s = 120;  // how long SSH may take to answer after the outlet is on again
  std::string defined_in;   // file:line, for messages
};

struct BoardConfig {
  std::string name;
  k3targets::TargetKind kind = k3targets::TargetKind::kSsh;  // ssh or local (this machine)
  std::string host;                                          // ssh: host name or address
  int port = 22;
  std::string user;                        // ssh: login name (empty: the ssh client's default)
  std::string identity;                    // ssh: private key file (absolute after loading)
  std::string known_hosts;                 // ssh: known_hosts file checked strictly (absolute)
  std::vector<std::string> exec_prefix;    // words run before the runner (empty on a real board)
  std::string work_dir;                    // absolute path on the board: runners, lock, hooks
  std::vector<int> cpus;                   // CPUs the runner may use (empty: all)
  std::string cpus_text;                   // as written, e.g. "8-15"
  std::vector<std::string> tags;           // e.g. k3, a100, qemu
  std::string variant = "rvv-dynamic";     // build variant whose runner is deployed
  std::string runner;                      // explicit local runner path (overrides variant)
  double timeout_s = 600;                  // per runner process, enforced on the board
  std::map<std::string, std::string> env;  // extra K3BENCH_* / K3_* settings for this board
  bool test_hooks = false;  // probe honours <work_dir>/test-hooks/ (tests only; never on a farm)
  // What ends a quarantine that a run recorded (it outlives the run): "release" -- only `k3tune
  // farm release --board B`; "healthy" -- also the first probe of a later run that finds the
  // board healthy (the board is leased and probed again then). Farm-wide through [defaults].
  std::string quarantine_until = "release";
  // Power recovery (harness/host/farm/power_recovery.h): a board quarantined as unreachable or
  // hung is power-cycled through its outlet, at most power_attempts_per_day times a UTC day.
  std::optional<PduOutlet> pdu;
  int power_attempts_per_day = 3;
  // Whether a probe that finds TCM blocks left acquired by a dead thread may release them (the
  // runner's --tcm-release); otherwise they stay a warning for a person (k3tune tcm release).
  bool recover_tcm_locks = false;
  std::string defined_in;  // file:line, for messages

  bool has_tag(const std::string& tag) const;
};

struct FarmConfig {
  std::string name = "local";
  std::string source;  // file path, or "built-in"
  std::string ssh = "ssh";
  std::string scp = "scp";
  std::string ssh_config;   // optional -F file for the client ("" : the client's default)
  std::string control_dir;  // ControlMaster sockets ("" : /tmp/k3tune-ssh-<uid>)
  double connect_timeout_s = 10;
  double control_persist_s = 60;
  // Reservation command run on the controller around each lease (empty: none). Its words may use
  // {board} and {host}; the lease's holder command is appended, and the tool must keep the board
  // reserved while that command runs and exit non-zero when it cannot reserve it (flock -n style).
  std::vector<std::string> lock_command;
  int max_timeouts = 2;             // consecutive runner timeouts that quarantine a board
  double max_temp_c = 95;           // a thermal zone at or above this reads as throttling
  double lease_wait_s = 20;         // how long taking a lease may wait for the board's answer
  std::vector<BoardConfig> boards;  // in file order
  SchedulerConfig scheduler;        // builtin leases, or Slurm (scheduler_config.h)

  const BoardConfig* find(const std::string& board) const;
  std::vector<std::string> names() const;
};

// The boards named in `names` (all when empty) that carry every tag in `tags`, in inventory order.
// Throws std::invalid_argument: "--board: unknown board 'x' (farm ...)" or "--board/--tag: no
// board of farm N (source) matches".
std::vector<std::string> select_boards(const FarmConfig& farm,
                                       const std::vector<std::string>& names,
                                       const std::vector<std::string>& tags);

// Reads a farm file. Throws std::runtime_error("file:line: key: what").
FarmConfig load_farm(const std::string& path);

// The built-in farm: "host" (the host runner), "qemu-vlen256" and "qemu-vlen1024" (the riscv64
// rvv runner under qemu-user), all kind local, working under <root>/build/farm/<board>.
FarmConfig builtin_local_farm(const std::string& root);

// "8-15", "0,2-3" -> sorted CPU numbers. Throws std::invalid_argument naming the bad item.
std::vector<int> parse_cpu_list(const std::string& text);

}  // namespace k3farm
