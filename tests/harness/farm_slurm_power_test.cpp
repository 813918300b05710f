// Power recovery on a Slurm farm (label slurm): a board that an earlier run quarantined and
// drained as unreachable, with a PDU outlet on a real loopback pdudaemon, is power-cycled by the
// controller before the jobs go out; its node is resumed only after the healthy probe, and the
// jobs measure on it again.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "harness/host/store/farm_state.h"
#include "harness/host/store/results.h"
#include "pdu_daemon_fixture.h"
#include "slurm_farm_fixture.h"

namespace {

using namespace k3slurm_test;

TEST_F(SlurmFarm, ADrainedDeadBoardIsPowerCycledAndResumedOnlyOnceHealthy) {
  PduDaemon pdu(lab_->dir());
  // An earlier run found b1 unreachable: its quarantine is in the database, its node drained.
  lab_->sshd(1).kill_all();
  fs::remove(lab_->dir() / "sshd-b1/sshd.pid");
  {
    auto db_conn = k3store::open_for_writing(db());
    k3store::insert_board_event(
        *db_conn,
        {"loopback", "b1", k3store::now_utc_us(), k3store::BoardEvent::kQuarantined, "unreachable",
         "board b1: unreachable: sshd killed by the test", "earlier", "test:1"});
  }
  slurm({"scontrol", "update", "nodename=b1", "state=drain",
         "reason=k3tune: unreachable: board b1: unreachable: sshd killed by the test"});
  ASSERT_NE(sinfo().find("b1 drained"), std::string::npos) << sinfo();
  write_file(farm_file_, with_outlet(read_file(farm_file_), "b1", pdu, 30));

  const auto r = bench(kFourShapes);
  ASSERT_EQ(r.code, 0) << r.err << r.out;
  const auto j = nlohmann::json::parse(r.out);
  std::printf("sinfo after the run:\n%sjobs: %s\n", sinfo().c_str(), j["jobs"].dump().c_str());
  EXPECT_EQ(j["measured_cells"], 4) << r.out;
  EXPECT_GE(measured_on(j, "b1"), 1) << r.out;  // back in service: the jobs used it
  EXPECT_EQ(sinfo().find("b1 drain"), std::string::npos) << sinfo();
  std::vector<std::string> events;
  for (const auto& e : k3store::board_events(
           *k3store::open_database(db(), k3store::OpenMode::kReadOnly), "loopback"))
    if (e.board == "b1") events.push_back(k3store::to_string(e.event));
  EXPECT_EQ(events, (std::vector<std::string>{"quarantined", "power_requested", "power_done",
                                              "came_back", "healthy", "recovered"}));
  EXPECT_NE(read_file(lab_->dir() / "power.log").find("off 1\non 1\n"), std::string::npos);
}

}  // namespace
