// The store's reads of measurement results (result_reads.h, results.h, maintenance.h) on a real
// SQLite file: each function against rows written through the store's own writers, with the
// expected rows worked out by hand from what was written.
#include <algorithm>

#include "harness/host/store/maintenance.h"
#include "harness/host/store/result_reads.h"
#include "store_fixture.h"

namespace {

using StoreResults = StoreFile;

TEST_F(StoreResults, OpenForWritingCreatesTheFolderWalAndSchema) {
  const std::string nested = path("a/b/new.db");
  {
    auto c = k3store::open_for_writing(nested);
    EXPECT_EQ(c->scalar_int("PRAGMA user_version"), k3store::kSchemaVersion);
    auto mode = c->prepare("PRAGMA journal_mode");
    ASSERT_TRUE(mode.step());
    EXPECT_EQ(mode.text(0), "wal");
    EXPECT_GE(c->scalar_int("PRAGMA busy_timeout"), 1000);
  }
  EXPECT_TRUE(std::filesystem::is_regular_file(nested));
  // A second writer and a reader open the same file without migrating it again.
  auto again = k3store::open_for_writing(nested);
  auto reader = k3store::open_database(nested, k3store::OpenMode::kReadOnly);
  EXPECT_FALSE(k3store::latest_run_uuid(*reader).has_value());
}

TEST_F(StoreResults, RunsAreFoundByPrefixTargetAndTime) {
  build("h1");
  run("run-a1", "h1", {"c1"});
  run("run-a2", "h1", {"c1"});
  run("run-b", "h1", {"c1"}, "qemu", R"({"metric":"instructions"})");
  k3store::finish_run(db(), "run-b", 3.0, 1.0, 0.5);

  EXPECT_EQ(k3store::runs_with_prefix(db(), "run-a").size(), 2u);
  const auto b = k3store::runs_with_prefix(db(), "run-b");
  ASSERT_EQ(b.size(), 1u);
  EXPECT_EQ(b[0].target, "qemu");
  EXPECT_EQ(b[0].status, "finished");
  EXPECT_EQ(b[0].settings_json, R"({"metric":"instructions"})");
  EXPECT_EQ(b[0].order_json, R"(["c1"])");
  EXPECT_FALSE(b[0].finished_at.empty());
  EXPECT_EQ(b[0].wall_s, 3.0);
  EXPECT_EQ(b[0].overhead_s, 1.5);  // wall - kernel - warm-up
  const auto a1 = k3store::runs_with_prefix(db(), "run-a1");
  ASSERT_EQ(a1.size(), 1u);
  EXPECT_EQ(a1[0].status, "running");
  EXPECT_EQ(a1[0].finished_at, "");
  EXPECT_FALSE(a1[0].wall_s.has_value());

  // Started in the same second: insertion order decides.
  EXPECT_EQ(k3store::latest_run_uuid(db()), std::optional<std::string>("run-b"));
  EXPECT_EQ(k3store::earlier_runs(db(), "local", "run-a2", "9999"),
            std::vector<std::string>{"run-a1"});
  EXPECT_TRUE(k3store::earlier_runs(db(), "local", "run-a2", "2000-01-01T00:00:00Z").empty());
  EXPECT_EQ(k3store::runs_in_window(db(), "local", "", "9999", 1),
            std::vector<std::string>{"run-a2"});
  EXPECT_EQ(k3store::runs_in_window(db(), "local", "", "9999", 5),
            (std::vector<std::string>{"run-a2", "run-a1"}));
  const auto all = k3store::all_runs(db());
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all.front().run_uuid, "run-a1");
  EXPECT_EQ(all.back().run_uuid, "run-b");
}

TEST_F(StoreResults, RunCellsCarryOnlyTheRunsOwnAggregates) {
  build("h1");
  run("r0", "h1", {"c-long"});
  run("r1", "h1", {"c-long", "c2"});
  aggregate("r0", "c-long", 50);
  aggregate("r1", "c2", 100);
  const auto cells = k3store::run_cells(db(), "r1");
  ASSERT_EQ(cells.size(), 2u);
  // Ordered by op, shape, then params text: {"tile":2} (c2) before {"tile":6} (c-long).
  EXPECT_EQ(cells[0].cell.cell_key, "c2");
  EXPECT_EQ(cells[0].cell.params_json, R"({"tile":2})");
  ASSERT_TRUE(cells[0].aggregate.has_value());
  EXPECT_TRUE(cells[0].aggregate->ok);
  EXPECT_EQ(cells[0].aggregate->mean_ns, 100.0);
  EXPECT_EQ(cells[0].aggregate->ci_low_ns, 99.0);
  EXPECT_EQ(cells[0].aggregate->processes, 2);
  EXPECT_EQ(cells[0].aggregate->method, "t");
  EXPECT_FALSE(cells[0].aggregate->cv_between.has_value());
  EXPECT_EQ(cells[1].cell.cell_key, "c-long");
  EXPECT_FALSE(cells[1].aggregate.has_value());  // r0's aggregate is not r1's

  const auto ok = k3store::ok_cells_of_run_build(db(), "r0");
  ASSERT_EQ(ok.size(), 1u);
  EXPECT_EQ(ok[0].cell_key, "c-long");
}

TEST_F(StoreResults, CountedProcessMeansLeaveOutWhatTheAggregateLeftOut) {
  build("h1");
  run("r0", "h1", {"c2"});
  run("r1", "h1", {"c2", "c3"});
  process("r1", "c2", 0, {10, 20});
  process("r1", "c2", 1, {30, 50}, "{}", /*disturbed=*/true);
  process("r0", "c2", 5, {100, 100});  // adopted by r1's aggregate (an interrupted run)
  process("r1", "c3", 0, {7, 9}, "{}", /*disturbed=*/true);
  aggregate("r1", "c2", 57, true, 2, /*excluded=*/1, R"(["r0"])");
  aggregate("r1", "c3", 8, true, 1, /*excluded=*/0);  // the disturbed process was counted
  const auto means = k3store::counted_process_means(db(), "r1");
  ASSERT_EQ(means.size(), 3u);
  EXPECT_EQ(means[0].cell_key, "c2");
  EXPECT_EQ(means[0].process_index, 0);
  EXPECT_DOUBLE_EQ(means[0].mean_ns, 15.0);
  EXPECT_EQ(means[1].process_index, 5);
  EXPECT_DOUBLE_EQ(means[1].mean_ns, 100.0);
  EXPECT_EQ(means[2].cell_key, "c3");
  EXPECT_DOUBLE_EQ(means[2].mean_ns, 8.0);

  EXPECT_EQ(k3store::counted_sample_times(db(), "r1", "c2"), (std::vector<double>{10, 20}));
  const auto counts = k3store::process_counts(db(), "r1");
  EXPECT_EQ(counts.ok, 3);
  EXPECT_EQ(counts.failed, 0);
  EXPECT_EQ(counts.disturbed, 2);
}

TEST_F(StoreResults, ProcessReportsAreChosenByOrderAccuracyAndDisturbance) {
  build("h1");
  run("r0", "h1", {"c2"});
  run("r1", "h1", {"c2", "c3"});
  process("r0", "c2", 0, {1}, R"({"accuracy":{"pass":false}})");
  process("r1", "c2", 0, {1}, R"({"environment":{"cpu_model":"x"}})", /*disturbed=*/true);
  process("r1", "c2", 1, {1}, R"({"accuracy":{"pass":true}})");
  process("r1", "c2", 2, {}, "{}", false, /*ok=*/false);
  process("r1", "c3", 3, {1}, "not json");

  const auto first = k3store::first_process_report(db(), "r1");
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ(first->process_index, 0);
  EXPECT_EQ(first->runner["environment"]["cpu_model"], "x");
  EXPECT_EQ(first->path, "rvv");
  // An accuracy block first, then this run's.
  const auto checked = k3store::checked_process_report(db(), "c2", "r1");
  ASSERT_TRUE(checked.has_value());
  EXPECT_EQ(checked->run_uuid, "r1");
  EXPECT_EQ(checked->process_index, 1);
  EXPECT_TRUE(checked->runner["accuracy"]["pass"].get<bool>());
  const auto counted = k3store::first_counted_report(db(), "r1", "c2");
  ASSERT_TRUE(counted.has_value());
  EXPECT_EQ(counted->process_index, 1);                                 // undisturbed first
  EXPECT_EQ(k3store::ok_process_reports(db(), "r1", "c2").size(), 2u);  // not the failed one
  const auto bad = k3store::ok_process_reports(db(), "r1", "c3");
  ASSERT_EQ(bad.size(), 1u);
  EXPECT_TRUE(bad[0].runner.is_discarded());
  EXPECT_FALSE(k3store::first_process_report(db(), "nope").has_value());
}

TEST_F(StoreResults, PointsAreTheOwnBuildsSuccessfulAggregates) {
  build("h1");
  build("h2");
  run("r1", "h1", {"c1", "c2"});
  k3store::insert_cell(db(), {"base", "local", "linear_decode", "{}", "{}", "h2", "{}"});
  aggregate("r1", "c1", 10);
  aggregate("r1", "c2", 20, /*ok=*/false);
  aggregate("r1", "base", 30);  // the A/B baseline's build
  run("r2", "h1", {"q1"}, "qemu");
  aggregate("r2", "q1", 40);

  const auto points = k3store::run_points(db(), "r1");
  ASSERT_EQ(points.size(), 1u);
  EXPECT_EQ(points[0].op, "linear_decode");
  EXPECT_EQ(points[0].mean_ns, 10.0);
  EXPECT_EQ(points[0].ci_high_ns, 11.0);
  EXPECT_EQ(points[0].build_hash, "h1");
  const auto all = k3store::all_points(db());
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].run_uuid, "r1");
  EXPECT_EQ(all[1].run_uuid, "r2");
  EXPECT_EQ(all[1].target, "qemu");

  auto counts = k3store::aggregate_counts(db());
  std::sort(counts.begin(), counts.end(), [](const auto& a, const auto& b) {
    return a.run_uuid + a.target < b.run_uuid + b.target;
  });
  ASSERT_EQ(counts.size(), 2u);
  EXPECT_EQ(counts[0].run_uuid, "r1");
  EXPECT_EQ(counts[0].ok, 2);
  EXPECT_EQ(counts[0].failed, 1);
  EXPECT_EQ(counts[1].target, "qemu");
  EXPECT_EQ(counts[1].ok, 1);
}

TEST_F(StoreResults, BuildsAreFoundByPrefixAndByCleanRevision) {
  build("abc1", "rev1");
  build("abd2", "rev1", /*dirty=*/true);
  build("xyz3", "rev1", false, "rvv");
  build("xyz4", "rev1");
  EXPECT_EQ(k3store::builds_with_prefix(db(), "ab").size(), 2u);
  EXPECT_EQ(k3store::builds_with_prefix(db(), "xyz3").size(), 1u);
  const auto clean = k3store::clean_builds(db(), "rev1", "host");
  ASSERT_EQ(clean.size(), 2u);
  for (const auto& b : clean) {
    EXPECT_EQ(b.source_dirty, std::optional<bool>(false));
    EXPECT_EQ(b.binary_path, "/bin/" + b.build_hash);
  }
  EXPECT_EQ(k3store::all_builds(db()).size(), 4u);
  const auto found = k3store::find_build(db(), "abd2");
  ASSERT_TRUE(found.has_value());
  EXPECT_EQ(found->source_dirty, std::optional<bool>(true));
  EXPECT_EQ(found->created_at.size(), std::string("2026-12-02T23:10:04Z").size());
}

TEST_F(StoreResults, RowCountsAndASnapshotAgreeWithWhatWasWritten) {
  build("h1");
  run("r1", "h1", {"c1", "c2"});
  process("r1", "c1", 0, {1, 2, 3});
  process("r1", "c2", 0, {4, 5});
  aggregate("r1", "c1", 2);
  const auto rows = k3store::result_row_counts(db());
  EXPECT_EQ(rows.builds, 1);
  EXPECT_EQ(rows.runs, 1);
  EXPECT_EQ(rows.cells, 2);
  EXPECT_EQ(rows.processes, 2);
  EXPECT_EQ(rows.samples, 5);
  EXPECT_EQ(rows.aggregates, 1);
  EXPECT_EQ(k3store::sample_count(db()), 5);

  const std::string copy = path("copy.db");
  k3store::snapshot_database(db(), copy);
  auto snap = k3store::open_database(copy, k3store::OpenMode::kReadOnly);
  EXPECT_EQ(k3store::result_row_counts(*snap).samples, 5);
  EXPECT_EQ(k3store::latest_run_uuid(*snap), std::optional<std::string>("r1"));
}

}  // namespace
