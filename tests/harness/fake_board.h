// A board transport test double: in-process fake boards (no SSH, no processes) for driving the
// real farm -- scheduler, leases, health probes, shared queue and database writer -- at a scale no
// test machine has sshds for. Each fake board answers the farm's board-side scripts the way a
// board does (board.cpp, lease.cpp: check/install a runner, run it under a timeout, facts, the
// lease lock and its try), keyed by the script's $0 name, and answers the runner itself:
// --list-ops and --facts with what the real host k3bench printed (captured once by the test), a
// cell with a k3bench result (the repetitions asked for, times drawn around a per-cell level).
//
// Scripted per board: the latency of every command and of a cell's run, and faults -- the board
// dies after K cell runs (runner processes; every later command, the lease holder included, reads
// as unreachable), every cell run hangs until the board-side timeout (exit 124), or the board
// reboots after K cell runs (its next probe reports a new boot id and a small uptime).
//
// Boards live in a FakeLab shared by every transport made from it, so two controllers in one
// process meet at the same boards and the same lease locks. A farm's lock_command (a process on the
// controller) is not run for fake boards.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "harness/host/farm/transport.h"

namespace k3farm_test {

struct FakeBoardScript {
  double command_latency_s = 0.002;  // every board command (facts, deploy steps, lease)
  double cell_latency_s = 0.01;      // one runner process measuring a cell
  int dies_after_runs = -1;          // >= 0: unreachable once this many cell runs ended on it
  bool runner_hangs = false;         // every cell run ends in the board-side timeout
  int reboots_after_runs = -1;       // >= 0: the probes after this many cell runs see a new boot
};

class FakeLab {
 public:
  // `list_ops` and `facts`: the runner's answers to --list-ops --json and --facts --json.
  FakeLab(std::string list_ops, std::string facts);
  ~FakeLab();

  void script(const std::string& board, const FakeBoardScript& s);
  // Transports for the farm (k3farm::TransportFactory): one fake board per inventory board.
  k3farm::TransportFactory transports();

  struct Board;  // one fake board's state (fake_board.cpp)
  Board& board(const std::string& name);
  int cells_run(const std::string& board);
  int cells_run() const { return cells_run_; }
  const std::string& list_ops() const { return list_ops_; }
  const std::string& facts() const { return facts_; }
  void count_cell() { ++cells_run_; }

 private:
  std::string list_ops_, facts_;
  std::mutex mu_;
  std::map<std::string, std::unique_ptr<Board>> boards_;
  std::map<std::string, FakeBoardScript> scripts_;
  std::atomic<int> cells_run_{0};
};

}  // namespace k3farm_test
