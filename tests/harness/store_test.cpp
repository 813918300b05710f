// The results database on real SQLite files: pragmas and schema version, refusal of foreign or
// damaged files without writing to them, idempotent merge, export.
#include <gtest/gtest.h>

#include <unistd.h>
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/host/store/database.h"
#include "harness/host/store/maintenance.h"
#include "harness/host/store/results.h"
#include "tests/support/scratch_dir.h"

namespace fs = std::filesystem;

namespace {

class HarnessStore : public ::testing::Test {
 protected:
  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  // One run with one cell, `procs` processes of `reps` samples.
  static void fill(k3store::Connection& c, const std::string& run, int procs, int reps) {
    k3store::upsert_build(
        c, {"hash1", "host", "/bin/k3bench", "g++ 12", "-O3", "{}", "abc", false, "k3tune build"});
    k3store::insert_run(c, {run, "k3tune bench", "local", "hash1", "host", "[]", procs, reps, 1});
    k3store::insert_cell(c, {"cell1", "local", "linear_decode", "{}", "{}", "hash1", "{}"});
    for (int p = 0; p < procs; ++p) {
      k3store::ProcessRecord pr;
      pr.run_uuid = run, pr.cell_key = "cell1", pr.process_index = p, pr.order_index = p;
      pr.ok = true, pr.exit_code = 0, pr.path = "generic", pr.runner_json = "{}";
      pr.wall_ns = 1000, pr.kernel_ns = 500.0;
      for (int r = 0; r < reps; ++r) {
        k3store::SampleRecord sample;
        sample.ns = 100.0 + r, sample.cpu_ns = 100.0, sample.iterations = 10;
        sample.counters = {{"cycles", 5.0}};
        pr.samples.push_back(sample);
      }
      k3store::insert_process(c, pr);
    }
  }
  k3test::ScratchDir dir_{"k3store_test_"};
};

std::string slurp(const std::string& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

TEST_F(HarnessStore, NewDatabaseHasSchemaAndPragmas) {
  auto c = k3store::open_database(path("a.db"), k3store::OpenMode::kCreateOrUpdate);
  EXPECT_EQ(c->scalar_int("PRAGMA user_version"), k3store::kSchemaVersion);
  EXPECT_EQ(c->scalar_int("PRAGMA application_id"), k3store::kApplicationId);
  EXPECT_EQ(c->scalar_int("PRAGMA foreign_keys"), 1);
  EXPECT_GE(c->scalar_int("PRAGMA busy_timeout"), 1000);
  {
    auto mode = c->prepare("PRAGMA journal_mode");
    ASSERT_TRUE(mode.step());
    EXPECT_EQ(mode.text(0), "wal");
  }
  // Re-opening an existing database migrates nothing and keeps its data.
  fill(*c, "run1", 2, 3);
  c.reset();
  auto again = k3store::open_database(path("a.db"), k3store::OpenMode::kCreateOrUpdate);
  EXPECT_EQ(again->scalar_int("SELECT count(*) FROM samples"), 6);
}

// Controllers that start on one new database in the same instant all open it: switching it to WAL
// answers SQLITE_BUSY at once (no busy handler) while another holds it, which once failed a
// two-controller run in CI with "database is locked".
TEST_F(HarnessStore, ConcurrentOpensOfANewDatabaseAllSucceed) {
  for (int attempt = 0; attempt < 40; ++attempt) {
    const std::string path = (dir_ / ("race-" + std::to_string(attempt) + ".db")).string();
    std::vector<std::string> errors(4);
    std::vector<std::thread> openers;
    for (std::size_t i = 0; i < errors.size(); ++i)
      openers.emplace_back([&, i] {
        try {
          k3store::open_database(path, k3store::OpenMode::kCreateOrUpdate);
        } catch (const std::exception& e) {
          errors[i] = e.what();
        }
      });
    for (auto& t : openers) t.join();
    for (const auto& e : errors) ASSERT_EQ(e, "") << "attempt " << attempt;
  }
}

TEST_F(HarnessStore, ForeignKeysAreEnforced) {
  auto c = k3store::open_database(path("a.db"), k3store::OpenMode::kCreateOrUpdate);
  k3store::ProcessRecord orphan;
  orphan.run_uuid = "no-such-run", orphan.cell_key = "no-such-cell", orphan.ok = true;
  orphan.exit_code = 0, orphan.wall_ns = 1, orphan.kernel_ns = 1.0;
  EXPECT_THROW(k3store::insert_process(*c, orphan), k3store::StoreError);
  EXPECT_EQ(c->scalar_int("SELECT count(*) FROM processes"), 0);  // the transaction rolled back
}

// A database of schema 9 (board events could only be quarantined, released, recovered): read-only
// opens refuse it until a writing command migrates it; the migration keeps every event as it was,
// and the power recovery's steps fit afterwards while an unknown event is still refused.
TEST_F(HarnessStore, Version9BoardEventsSurviveTheMigrationToPowerSteps) {
  const std::string db = path("v9.db");
  {
    auto c = k3store::open_database(db, k3store::OpenMode::kCreateOrUpdate);
    // The table as schema 9 created it (test data: the old definition, written out).
    c->exec(R"sql(
DROP TABLE farm_board_events;
CREATE TABLE farm_board_events(
  farm TEXT NOT NULL, board TEXT NOT NULL, at TEXT NOT NULL,
  event TEXT NOT NULL CHECK(event IN ('quarantined', 'released', 'recovered')),
  fault TEXT, reason TEXT NOT NULL, run_uuid TEXT, actor TEXT NOT NULL,
  PRIMARY KEY(farm, board, at, event));
INSERT INTO farm_board_events VALUES
  ('lab', 'k3-01', '2026-12-01T03:00:00.000001Z', 'quarantined', 'unreachable', 'ssh exit 255',
   'run-1', 'ctl:1'),
  ('lab', 'k3-01', '2026-12-01T09:00:00.000002Z', 'released', NULL, 'by hand', NULL, 'me:2'),
  ('lab', 'k3-02', '2026-12-02T03:00:00.000003Z', 'recovered', NULL, 'probe passed', 'run-2',
   'ctl:3');
PRAGMA user_version = 9;
)sql");
    EXPECT_THROW(
        c->exec("INSERT INTO farm_board_events VALUES ('lab', 'k3-01', 'x', 'power_requested', "
                "NULL, 'r', NULL, 'a')"),
        k3store::StoreError);
  }
  try {
    k3store::open_database(db, k3store::OpenMode::kReadOnly);
    ADD_FAILURE() << "a schema-9 database opened read-only";
  } catch (const k3store::StoreError& e) {
    EXPECT_EQ(std::string(e.what()),
              db + ": older schema; open it once with a writing command to migrate");
  }
  const auto rows_of = [](k3store::Connection& c) {
    std::vector<std::string> rows;
    auto q = c.prepare(
        "SELECT farm || '|' || board || '|' || at || '|' || event || '|' || ifnull(fault, '-') || "
        "'|' || reason || '|' || ifnull(run_uuid, '-') || '|' || actor FROM farm_board_events "
        "ORDER BY at");
    while (q.step()) rows.push_back(q.text(0));
    return rows;
  };
  auto c = k3store::open_database(db, k3store::OpenMode::kCreateOrUpdate);
  EXPECT_EQ(c->scalar_int("PRAGMA user_version"), k3store::kSchemaVersion);
  EXPECT_EQ(rows_of(*c),
            (std::vector<std::string>{
                "lab|k3-01|2026-12-01T03:00:00.000001Z|quarantined|unreachable|ssh exit 255|run-1|"
                "ctl:1",
                "lab|k3-01|2026-12-01T09:00:00.000002Z|released|-|by hand|-|me:2",
                "lab|k3-02|2026-12-02T03:00:00.000003Z|recovered|-|probe passed|run-2|ctl:3"}));
  c->exec(
      "INSERT INTO farm_board_events VALUES ('lab', 'k3-01', '2026-12-03T03:00:00Z', "
      "'power_requested', NULL, 'cycle 1', 'run-3', 'ctl:4')");
  EXPECT_EQ(rows_of(*c).size(), 4u);
  EXPECT_THROW(c->exec("INSERT INTO farm_board_events VALUES ('lab', 'k3-01', 'y', 'exploded', "
                       "NULL, 'r', NULL, 'a')"),
               k3store::StoreError);
  // The primary key came with the copy: the same event at the same moment is one row.
  EXPECT_THROW(c->exec("INSERT INTO farm_board_events VALUES ('lab', 'k3-01', "
                       "'2026-12-03T03:00:00Z', 'power_requested', NULL, 'again', NULL, 'ctl:5')"),
               k3store::StoreError);
  c.reset();
  EXPECT_NO_THROW(k3store::open_database(db, k3store::OpenMode::kReadOnly));
}

TEST_F(HarnessStore, RefusesNonSqliteFileWithoutTouchingIt) {
  const std::string p = path("notes.txt");
  std::ofstream(p) << "these are not the results you are looking for\n";
  const std::string before = slurp(p);
  try {
    k3store::open_database(p, k3store::OpenMode::kCreateOrUpdate);
    FAIL() << "expected StoreError";
  } catch (const k3store::StoreError& e) {
    EXPECT_NE(std::string(e.what()).find("not a k3tune database"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(p), std::string::npos);
  }
  EXPECT_EQ(slurp(p), before);
  EXPECT_FALSE(fs::exists(p + "-wal"));
}

TEST_F(HarnessStore, RefusesOtherApplicationsSqliteDatabase) {
  const std::string p = path("other.db");
  {
    k3store::Connection c(p, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
    c.exec("CREATE TABLE t(x); INSERT INTO t VALUES (1);");
  }
  const std::string before = slurp(p);
  EXPECT_THROW(k3store::open_database(p, k3store::OpenMode::kCreateOrUpdate), k3store::StoreError);
  EXPECT_EQ(slurp(p), before);
}

TEST_F(HarnessStore, DetectsDamage) {
  const std::string p = path("a.db");
  {
    auto c = k3store::open_database(p, k3store::OpenMode::kCreateOrUpdate);
    fill(*c, "run1", 3, 50);
    c->exec("PRAGMA wal_checkpoint(TRUNCATE)");
  }
  // Overwrite the middle of the file (table b-tree pages) with garbage; the header stays valid.
  std::string bytes = slurp(p);
  ASSERT_GT(bytes.size(), 8192u);
  for (std::size_t i = 4096 + 100; i < bytes.size() - 100; i += 7)
    bytes[i] = static_cast<char>(0xA5);
  std::ofstream(p, std::ios::binary | std::ios::trunc) << bytes;
  try {
    auto c = k3store::open_database(p, k3store::OpenMode::kReadOnly);
    // quick_check may pass a page-level scan; the full check must then find it.
    EXPECT_FALSE(k3store::check_database(*c).empty());
  } catch (const k3store::StoreError& e) {
    EXPECT_NE(std::string(e.what()).find("damaged"), std::string::npos) << e.what();
  }
}

TEST_F(HarnessStore, MergeIsIdempotent) {
  {
    auto a = k3store::open_database(path("a.db"), k3store::OpenMode::kCreateOrUpdate);
    fill(*a, "run-a", 2, 3);
    auto b = k3store::open_database(path("b.db"), k3store::OpenMode::kCreateOrUpdate);
    fill(*b, "run-b", 3, 3);
  }
  auto added = k3store::merge_databases(path("all.db"), {path("a.db"), path("b.db")});
  EXPECT_EQ(added["samples"], 15);
  EXPECT_EQ(added["builds"], 1);  // the same build in both shards
  added = k3store::merge_databases(path("all.db"), {path("a.db"), path("b.db")});
  EXPECT_EQ(added["samples"], 0);
  EXPECT_EQ(added["runs"], 0);
  auto all = k3store::open_database(path("all.db"), k3store::OpenMode::kReadOnly);
  EXPECT_EQ(all->scalar_int("SELECT count(*) FROM samples"), 15);
  EXPECT_EQ(all->scalar_int("SELECT count(*) FROM runs"), 2);
  EXPECT_TRUE(k3store::check_database(*all).empty());
  EXPECT_THROW(k3store::merge_databases(path("all.db"), {path("all.db")}), k3store::StoreError);
}

TEST_F(HarnessStore, MergeRejectsForeignShardBeforeWriting) {
  std::ofstream(path("junk.db")) << "junk";
  EXPECT_THROW(k3store::merge_databases(path("new.db"), {path("junk.db")}), k3store::StoreError);
  EXPECT_FALSE(fs::exists(path("new.db")));
}

TEST_F(HarnessStore, ExportCsvAndJson) {
  auto c = k3store::open_database(path("a.db"), k3store::OpenMode::kCreateOrUpdate);
  fill(*c, "run1", 2, 2);
  std::ostringstream csv, json;
  k3store::export_table(*c, "samples", "csv", csv);
  const std::string text = csv.str();
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 5);  // header + 4 samples
  EXPECT_EQ(text.rfind("run_uuid,cell_key,process_index,rep_index,ns", 0), 0u);
  k3store::export_table(*c, "samples", "json", json);
  const auto j = nlohmann::json::parse(json.str());
  ASSERT_EQ(j.size(), 4u);
  EXPECT_DOUBLE_EQ(j[1]["ns"].get<double>(), 101.0);
  EXPECT_THROW(k3store::export_table(*c, "sqlite_master", "csv", csv), k3store::StoreError);
}

}  // namespace
