// The store's rows of the farm, its sweeps, the nightly and bisections on a real SQLite file
// (farm_state.h, farm_sweeps.h, nightlies.h, bisections.h).
#include "harness/host/store/bisections.h"
#include "harness/host/store/farm_state.h"
#include "harness/host/store/farm_sweeps.h"
#include "harness/host/store/nightlies.h"
#include "harness/host/store/result_reads.h"
#include "store_fixture.h"

namespace {

using StoreState = StoreFile;

TEST_F(StoreState, ProbesAreNumberedPerBoardAndReadInOrder) {
  k3store::insert_probe(db(), "run1", "k3-02", true, R"({"n":1})");
  k3store::insert_probe(db(), "run1", "k3-01", false, R"({"n":2})");
  k3store::insert_probe(db(), "run1", "k3-02", true, R"({"n":3})");
  k3store::insert_probe(db(), "run2", "k3-01", true, R"({"n":4})");
  const auto rows = k3store::probe_rows(db(), "run1");
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].board, "k3-01");
  EXPECT_FALSE(rows[0].ok);
  EXPECT_EQ(rows[0].seq, 0);
  EXPECT_EQ(rows[1].probe_json, R"({"n":1})");
  EXPECT_EQ(rows[2].seq, 1);
  EXPECT_EQ(rows[2].probe_json, R"({"n":3})");
  EXPECT_FALSE(rows[2].taken_at.empty());
}

TEST_F(StoreState, ALeaseIsHeldByOneHolderAndRemovedOnlyByIt) {
  const k3store::LeaseRow mine{"k3-01", "lab", "run1", "hostA", 100, "boot:1", std::nullopt, "t0"};
  EXPECT_FALSE(k3store::insert_lease(db(), mine).has_value());
  const auto other = k3store::insert_lease(
      db(), {"k3-01", "lab", "run2", "hostB", 200, "boot:2", std::nullopt, "t1"});
  ASSERT_TRUE(other.has_value());
  EXPECT_EQ(other->holder_host, "hostA");
  k3store::set_lease_remote_pid(db(), "k3-01", 4242);
  auto impostor = mine;
  impostor.holder_start = "boot:9";  // same pid, another process
  k3store::delete_lease(db(), impostor);
  auto rows = k3store::lease_rows(db());
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].remote_pid, std::optional<std::int64_t>(4242));
  k3store::delete_lease(db(), mine);
  EXPECT_TRUE(k3store::lease_rows(db()).empty());
}

TEST_F(StoreState, SweepCellsAndDisturbedRunsAreRecorded) {
  build("h1");
  run("r1", "h1", {"c1", "c2"});
  process("r1", "c1", 0, {1, 2});
  process("r1", "c2", 0, {3, 4});
  aggregate("r1", "c1", 1.5);
  aggregate("r1", "c2", 3.5);
  EXPECT_TRUE(k3store::run_measured_cell(db(), "r1", "c1"));
  EXPECT_EQ(k3store::ok_aggregate_keys(db()), (std::set<std::string>{"c1", "c2"}));
  EXPECT_EQ(k3store::mark_run_disturbed(db(), "r1", "board rebooted"), 2);
  EXPECT_FALSE(k3store::run_measured_cell(db(), "r1", "c1"));
  EXPECT_TRUE(k3store::ok_aggregate_keys(db()).empty());
  EXPECT_EQ(k3store::process_counts(db(), "r1").disturbed, 2);

  k3store::insert_sweep_cell(db(), {"sweep1", 0, 1, "k3-01", "r1", "c1", "moved", "lost", "1/1"});
  k3store::insert_sweep_cell(db(), {"sweep1", 0, 2, "k3-02", "", "", "unmeasured", "", "1/1"});
  auto s = db().prepare(
      "SELECT count(*), sum(run_uuid IS NULL), sum(reason IS NULL) FROM farm_sweep_cells");
  ASSERT_TRUE(s.step());
  EXPECT_EQ(s.integer(0), 2);
  EXPECT_EQ(s.integer(1), 1);  // "" is stored as none
  EXPECT_EQ(s.integer(2), 1);
}

TEST_F(StoreState, AQueueClaimStandsUntilItsHolderMayBeTakenOver) {
  const k3store::QueueClaimRow a{"q", 3, "sweepA", "hostA", 10, "boot:1", "taken"};
  const k3store::QueueClaimRow b{"q", 3, "sweepB", "hostB", 20, "boot:2", "taken"};
  int asked = 0;
  const auto never = [&](const k3store::QueueClaimRow&) { return ++asked, false; };
  EXPECT_TRUE(k3store::claim_queue_cell(db(), a, never).taken);
  EXPECT_EQ(asked, 0);                                           // nobody held it
  EXPECT_TRUE(k3store::claim_queue_cell(db(), a, never).taken);  // its own claim
  const auto refused = k3store::claim_queue_cell(db(), b, never);
  EXPECT_FALSE(refused.taken);
  ASSERT_TRUE(refused.other.has_value());
  EXPECT_EQ(refused.other->sweep_uuid, "sweepA");
  EXPECT_EQ(refused.other->holder_pid, 10);
  EXPECT_EQ(asked, 1);
  // The holder is gone: taken over; then done, and the done claim is what others see.
  const auto taken = k3store::claim_queue_cell(
      db(), b, [](const k3store::QueueClaimRow& o) { return o.state != "done"; });
  EXPECT_TRUE(taken.taken);
  k3store::finish_claim(db(), "q", 3, "sweepB");
  k3store::drop_claim(db(), "q", 3, "sweepB");  // a done claim is not given back
  const auto done = k3store::claim_queue_cell(
      db(), a, [](const k3store::QueueClaimRow& o) { return o.state != "done"; });
  EXPECT_FALSE(done.taken);
  ASSERT_TRUE(done.other.has_value());
  EXPECT_EQ(done.other->state, "done");
  // A taken claim dropped by its holder is free again.
  EXPECT_TRUE(
      k3store::claim_queue_cell(db(), {"q", 4, "sweepA", "h", 1, "s", "taken"}, never).taken);
  k3store::drop_claim(db(), "q", 4, "sweepA");
  EXPECT_TRUE(
      k3store::claim_queue_cell(db(), {"q", 4, "sweepB", "h", 2, "s", "taken"}, never).taken);
}

TEST_F(StoreState, NightliesAndTheirStepsAreReadBack) {
  build("hostbuild", "rev-1");
  k3store::begin_nightly(db(),
                         {"n1", "quick", "/nightly/n1", "", "running", std::nullopt, "", "", ""});
  k3store::begin_step(db(), "n1", "bench", 1, "k3tune bench");
  k3store::begin_step(db(), "n1", "build-host", 0, "k3tune build");
  k3store::finish_step(db(), "n1", "build-host", true, 0, 1.5, R"({"hash":"hostbuild"})");
  k3store::begin_step(db(), "n1", "verdict-bench", 2, "k3tune report");
  k3store::finish_step(db(), "n1", "verdict-bench", true, 4, 2.0, R"({"run_uuid":"run-v"})");

  const auto running = k3store::find_step(db(), "n1", "bench");
  ASSERT_TRUE(running.has_value());
  EXPECT_EQ(running->status, "running");
  EXPECT_FALSE(running->exit_code.has_value());
  EXPECT_EQ(running->detail_json, "");
  // While the nightly runs, its verdict run is in the verdict step's detail.
  EXPECT_EQ(k3store::nightly_verdict_run(db(), "n1"), std::optional<std::string>("run-v"));
  EXPECT_FALSE(k3store::nightly_verdict_run(db(), "n0").has_value());
  EXPECT_FALSE(k3store::previous_step(db(), "n2", "build-host").has_value());  // n1 unfinished

  k3store::finish_nightly(db(), "n1", "regression", 4, "hostbuild", "run-final");
  EXPECT_EQ(k3store::nightly_verdict_run(db(), "n1"), std::optional<std::string>("run-final"));
  const auto prev = k3store::previous_step(db(), "n2", "build-host");
  ASSERT_TRUE(prev.has_value());
  EXPECT_EQ(prev->nightly_id, "n1");
  EXPECT_EQ(prev->detail_json, R"({"hash":"hostbuild"})");
  EXPECT_EQ(prev->exit_code, std::optional<int>(0));
  EXPECT_FALSE(k3store::previous_step(db(), "n2", "bench").has_value());  // never done
  EXPECT_EQ(k3store::nightly_dir(db(), "n1"), "/nightly/n1");

  k3store::begin_nightly(db(),
                         {"n2", "full", "/nightly/n2", "", "running", std::nullopt, "", "", ""});
  const auto earlier = k3store::earlier_nightlies(db(), "n2");
  ASSERT_EQ(earlier.size(), 1u);
  EXPECT_EQ(earlier[0].host_revision, "rev-1");
  EXPECT_EQ(earlier[0].verdict_run_uuid, "run-final");
  const auto all = k3store::all_nightlies(db());
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].exit_code, std::optional<int>(4));
  EXPECT_FALSE(all[0].finished_at.empty());
  EXPECT_FALSE(all[1].exit_code.has_value());
  EXPECT_EQ(all[1].host_revision, "");
  const auto steps = k3store::all_nightly_steps(db());
  ASSERT_EQ(steps.size(), 3u);  // in the profile's order
  EXPECT_EQ(steps[0].step, "build-host");
  EXPECT_EQ(steps[0].wall_s, std::optional<double>(1.5));
  EXPECT_EQ(steps[1].step, "bench");
  EXPECT_EQ(steps[2].exit_code, std::optional<int>(4));
}

TEST_F(StoreState, ANightlysBisectionsAreSummarisedWithTheirProbes) {
  k3store::begin_bisection(db(), {"b1", "good", "bad", "time", "host", "local", "[]", 8, "n1"});
  k3store::begin_bisection(db(), {"b2", "good", "bad", "time", "host", "local", "[]", 8, ""});
  for (int seq = 0; seq < 3; ++seq)
    for (const char* label : {"case-a", "case-b"}) {
      k3store::BisectionProbeRecord p;
      p.bisection_id = "b1", p.seq = seq, p.case_label = label, p.revision = "rev";
      p.position = seq + 1, p.outcome = seq == 1 ? "skip" : "bad";
      k3store::insert_bisection_probe(db(), p);
    }
  k3store::finish_bisection(db(), "b1", "range", "", {"r4", "r5"}, 12.0);
  const auto found = k3store::nightly_bisections(db());
  ASSERT_EQ(found.size(), 1u);  // b2 chased no nightly
  EXPECT_EQ(found[0].bisection.bisection_id, "b1");
  EXPECT_EQ(found[0].bisection.nightly_id, "n1");
  EXPECT_EQ(found[0].bisection.status, "range");
  EXPECT_EQ(found[0].bisection.range_json, R"(["r4","r5"])");
  EXPECT_EQ(found[0].bisection.first_bad, "");
  EXPECT_EQ(found[0].probed, 3);  // commits, not cases
  EXPECT_EQ(found[0].skipped, 1);
}

}  // namespace
