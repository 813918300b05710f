// A real pdudaemon on loopback for the power recovery tests (Debian's pdudaemon, HTTP listener,
// localcmdline driver) whose outlet N switches loopback sshd board bN of a LoopbackFarm.
#pragma once

#include <nlohmann/json.hpp>

#include "farm_test_support.h"
#include "harness/host/farm/background_process.h"

namespace k3farm_test {

// pdudaemon on a free loopback port, with one PDU "lab" of driver localcmdline whose outlet N
// runs `power.sh on|off N`: off kills board bN's sshd and all it started, on starts it again
// (unless <dir>/dead-bN exists: that board never comes back).
class PduDaemon {
 public:
  explicit PduDaemon(const TempDir& dir) : dir_(dir.path()) {
    write_file(dir / "power.sh", R"sh(#!/bin/sh
dir=$(dirname "$0"); action=$1; outlet=$2
echo "$action $outlet" >> "$dir/power.log"
kill_tree() { for c in $(ps -o pid= --ppid "$1"); do kill_tree "$c"; done; kill -KILL "$1" 2>/dev/null; }
pidfile="$dir/sshd-b$outlet/sshd.pid"
case "$action" in
  off) [ -f "$pidfile" ] && kill_tree "$(cat "$pidfile")"; rm -f "$pidfile" ;;
  on) [ -e "$dir/dead-b$outlet" ] || /usr/sbin/sshd -f "$dir/sshd-b$outlet/sshd_config" \
        -E "$dir/sshd-b$outlet/sshd.log" ;;
esac
)sh");
    port_ = free_loopback_port();
    const nlohmann::json conf = {{"daemon",
                                  {{"hostname", "127.0.0.1"},
                                   {"port", port_},
                                   {"listener", "http"},
                                   {"logging_level", "INFO"}}},
                                 {"pdus",
                                  {{"lab",
                                    {{"driver", "localcmdline"},
                                     {"cmd_on", "sh " + dir / "power.sh" + " on %s"},
                                     {"cmd_off", "sh " + dir / "power.sh" + " off %s"}}}}}};
    write_file(dir / "pdudaemon.conf", conf.dump(2));
    daemon_ = std::make_unique<k3farm::BackgroundProcess>(
        std::vector<std::string>{"/usr/sbin/pdudaemon", "--conf", dir / "pdudaemon.conf",
                                 "--logfile", dir / "pdudaemon.log"});
    for (int i = 0; i < 200 && !port_accepts(port_); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    if (!port_accepts(port_))
      throw std::runtime_error("pdudaemon did not listen: " + daemon_->stderr_text());
  }
  // The boards started by `power.sh on` are daemons of their own: switched off here.
  ~PduDaemon() {
    daemon_->stop(1);
    for (int outlet = 1; outlet <= 2; ++outlet)
      k3targets::run_process({"sh", dir_ + "/power.sh", "off", std::to_string(outlet)},
                             k3targets::ProcessOptions::with_timeout(10));
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }

 private:
  std::string dir_;
  int port_ = 0;
  std::unique_ptr<k3farm::BackgroundProcess> daemon_;
};

// `farm` (a LoopbackFarm file's text) with board bN on outlet N of `pdu`: its [boards.bN] table
// gains `keys` and pdu = { ..., delay_s = 1, ssh_wait_s = <ssh_wait_s> }.
inline std::string with_outlet(std::string farm, const std::string& board, const PduDaemon& pdu,
                               double ssh_wait_s, const std::string& keys = "") {
  const std::string header = "[boards." + board + "]\n";
  const auto at = farm.find(header);
  if (at == std::string::npos) throw std::runtime_error("no " + header);
  farm.replace(at, header.size(),
               header + keys + "pdu = { daemon = \"" + pdu.url() + "\", name = \"lab\", outlet = " +
                   board.substr(1) + ", delay_s = 1, ssh_wait_s = " + std::to_string(ssh_wait_s) +
                   " }\npower_attempts_per_day = 2\n");
  return farm;
}

}  // namespace k3farm_test
