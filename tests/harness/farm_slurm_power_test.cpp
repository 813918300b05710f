// Power recovery on a Slurm farm (label slurm): boards that an earlier run quarantined and
// drained as unreachable, with PDU outlets on a real loopback pdudaemon, are power-cycled by the
// controller before the jobs go out; a node is resumed only after its board's healthy probe (the
// jobs measure on it again), one that never comes back stays drained.
#include <gtest/gtest.h>

#include <map>

#include <nlohmann/json.hpp>

#include "harness/host/store/farm_state.h"
#include "harness/host/store/results.h"
#include "pdu_daemon_fixture.h"
#include "slurm_farm_fixture.h"

namespace {

using namespace k3slurm_test;

TEST_F(SlurmFarm, ADrainedDeadBoardIsPowerCycledAndResumedOnlyOnceHealthy) {
  PduDaemon pdu(lab_->dir());
  // An earlier run found b1 and b2 unreachable: their quarantines are in the database, their
  // nodes drained. b1's outlet brings it back; b2's never does (its "on" starts nothing).
  write_file(lab_->dir() / "dead-b2", "");
  for (int b = 1; b <= 2; ++b) {
    const std::string board = fmt_board(static_cast<std::size_t>(b));
    lab_->sshd(b).kill_all();
    fs::remove(lab_->dir() / ("sshd-" + board + "/sshd.pid"));
    k3store::insert_board_event(
        *k3store::open_for_writing(db()),
        {"loopback", board, k3store::now_utc_us(), k3store::BoardEvent::kQuarantined, "unreachable",
         "board " + board + ": unreachable: sshd killed by the test", "earlier", "test:1"});
    slurm({"scontrol", "update", "nodename=" + board, "state=drain",
           "reason=k3tune: unreachable: board " + board + ": sshd killed by the test"});
  }
  ASSERT_NE(sinfo().find("b1 drained"), std::string::npos) << sinfo();
  write_file(farm_file_,
             with_outlet(with_outlet(read_file(farm_file_), "b1", pdu, 30), "b2", pdu, 1));

  const auto r = bench(kFourShapes);
  ASSERT_EQ(r.code, 0) << r.err << r.out;
  const auto j = nlohmann::json::parse(r.out);
  std::printf("sinfo after the run:\n%sjobs: %s\n", sinfo().c_str(), j["jobs"].dump().c_str());
  EXPECT_EQ(j["measured_cells"], 4) << r.out;
  EXPECT_EQ(measured_on(j, "b1"), 4) << r.out;  // back in service: the jobs used it
  EXPECT_EQ(sinfo().find("b1 drain"), std::string::npos) << sinfo();
  // b2 never probed healthy: its node stays drained.
  EXPECT_NE(sinfo().find("b2 drained"), std::string::npos) << sinfo();
  std::map<std::string, std::vector<std::string>> events;
  for (const auto& e : k3store::board_events(
           *k3store::open_database(db(), k3store::OpenMode::kReadOnly), "loopback"))
    events[e.board].push_back(k3store::to_string(e.event));
  EXPECT_EQ(events["b1"], (std::vector<std::string>{"quarantined", "power_requested", "power_done",
                                                    "came_back", "healthy", "recovered"}));
  EXPECT_EQ(events["b2"],
            (std::vector<std::string>{"quarantined", "power_requested", "power_done", "not_back",
                                      "power_requested", "power_done", "not_back", "given_up"}));
  EXPECT_NE(read_file(lab_->dir() / "power.log").find("off 1\non 1\n"), std::string::npos);
}

}  // namespace
