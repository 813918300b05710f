// `k3tune bench --farm` on local boards running the host k3bench (label harness): cells spread
// over the boards and stored once each, --resume skips what is measured, --shard i/n partitions
// the cells and `db merge` of the shards holds exactly the cells and samples of both, and bad
// input leaves no database behind.
#include <gtest/gtest.h>

#include <set>

#include <nlohmann/json.hpp>

#include "farm_test_support.h"
#include "harness/host/store/database.h"

namespace {

using namespace k3farm_test;

class FarmSweep : public ::testing::Test {
 protected:
  void SetUp() override {
    write_file(tmp_ / "farm.toml",
               std::string("[farm]\nname = \"two-local\"\n[defaults]\nkind = \"local\"\n") +
                   "runner = \"" + K3BENCH_PATH + "\"\nvariant = \"host\"\ntimeout_s = 120\n" +
                   "[boards.l1]\nwork_dir = \"" + (tmp_ / "l1") + "\"\n[boards.l2]\nwork_dir = \"" +
                   (tmp_ / "l2") + "\"\n");
  }
  struct Cmd {
    int code;
    std::string out, err;
    nlohmann::json json() const { return nlohmann::json::parse(out); }
  };
  Cmd k3tune(const std::string& db, std::vector<std::string> args) const {
    std::vector<std::string> argv{K3TUNE_PATH, "--root", K3TUNE_ROOT, "--db", db, "-q"};
    argv.insert(argv.end(), args.begin(), args.end());
    const auto r = k3targets::run_process(argv, k3targets::ProcessOptions::with_timeout(300));
    return {r.signal ? 128 + r.signal : r.exit_code, r.out, r.err};
  }
  // Six tiny decode cells (three shapes x two worker counts), two processes each.
  Cmd bench(const std::string& db, std::vector<std::string> extra = {}) const {
    std::vector<std::string> args{
        "--json", "bench", "--farm", tmp_ / "farm.toml", "--cells-per-probe", "2"};
    args = with_args(with_args(args, six_decode_cells()), quick_measure("0.002"));
    return k3tune(db, with_args(args, extra));
  }
  static std::int64_t count(const std::string& db, const std::string& sql) {
    return k3store::open_database(db, k3store::OpenMode::kReadOnly)->scalar_int(sql);
  }
  TempDir tmp_;
};

TEST_F(FarmSweep, CellsSpreadOverTheBoardsAndResumeMeasuresNothingTwice) {
  const std::string db = tmp_ / "a.db";
  const auto first = bench(db);
  ASSERT_EQ(first.code, 0) << first.err;
  const auto j = first.json();
  EXPECT_EQ(j["measured_cells"], 6);
  EXPECT_EQ(j["samples_before"], 0);
  const auto samples = count(db, "SELECT count(*) FROM samples");
  EXPECT_EQ(j["samples_after"], samples);
  std::set<std::string> boards;
  for (const auto& c : j["cells"]) {
    EXPECT_EQ(c["status"], "measured") << c.dump();
    boards.insert(c["board"].get<std::string>());
    // The cell identity holds the board: its cell row names it as the target.
    EXPECT_EQ(count(db, "SELECT count(*) FROM cells WHERE cell_key = '" +
                            c["cell_key"].get<std::string>() + "' AND target = '" +
                            c["board"].get<std::string>() + "'"),
              1);
  }
  EXPECT_LE(boards.size(), 2u);
  // Every hand-out is recorded; leases were released when the sweep ended.
  EXPECT_EQ(count(db, "SELECT count(*) FROM farm_sweep_cells WHERE outcome = 'measured'"), 6);
  EXPECT_EQ(count(db, "SELECT count(*) FROM farm_leases"), 0);
  std::printf("farm sweep: %lld samples in %zu batch runs on %zu boards\n",
              static_cast<long long>(samples), j["runs"].size(), boards.size());

  const auto again = bench(db, {"--resume"});
  ASSERT_EQ(again.code, 0) << again.err;
  EXPECT_EQ(again.json()["skipped_cells"], 6);
  EXPECT_EQ(again.json()["processes_run"], 0);
  EXPECT_EQ(count(db, "SELECT count(*) FROM samples"), samples);
}

TEST_F(FarmSweep, ShardsPartitionTheCellsAndMergeIntoOneDatabase) {
  const auto s1 = bench(tmp_ / "s1.db", {"--shard", "1/2"});
  const auto s2 = bench(tmp_ / "s2.db", {"--shard", "2/2"});
  ASSERT_EQ(s1.code, 0) << s1.err;
  ASSERT_EQ(s2.code, 0) << s2.err;
  // Position mod n over the canonical list: cells 0, 2, 4 and 1, 3, 5.
  std::vector<int> i1, i2;
  const auto j1 = s1.json(), j2 = s2.json();
  for (const auto& c : j1["cells"]) i1.push_back(c["index"]);
  for (const auto& c : j2["cells"]) i2.push_back(c["index"]);
  EXPECT_EQ(i1, (std::vector<int>{0, 2, 4}));
  EXPECT_EQ(i2, (std::vector<int>{1, 3, 5}));
  const auto n1 = count(tmp_ / "s1.db", "SELECT count(*) FROM samples");
  const auto n2 = count(tmp_ / "s2.db", "SELECT count(*) FROM samples");
  const std::string merged = tmp_ / "merged.db";
  const auto m = k3tune(merged, {"db", "merge", tmp_ / "s1.db", tmp_ / "s2.db"});
  ASSERT_EQ(m.code, 0) << m.err;
  EXPECT_EQ(count(merged, "SELECT count(*) FROM samples"), n1 + n2);
  EXPECT_EQ(count(merged, "SELECT count(DISTINCT op || shape_json || params_json) FROM cells"), 6);
  EXPECT_EQ(count(merged, "SELECT count(*) FROM aggregates WHERE status = 'ok'"), 6);
  EXPECT_EQ(count(merged, "SELECT count(DISTINCT shard) FROM farm_sweep_cells"), 2);
  // Merging again adds nothing.
  ASSERT_EQ(k3tune(merged, {"db", "merge", tmp_ / "s1.db", tmp_ / "s2.db"}).code, 0);
  EXPECT_EQ(count(merged, "SELECT count(*) FROM samples"), n1 + n2);
  std::printf("shards: %lld + %lld samples, merged %lld\n", static_cast<long long>(n1),
              static_cast<long long>(n2),
              static_cast<long long>(count(merged, "SELECT count(*) FROM samples")));
}

TEST_F(FarmSweep, BadInputIsOneLineAndWritesNothing) {
  const std::string db = tmp_ / "none.db";
  for (const auto& [args, expected] : std::vector<std::pair<std::vector<std::string>, std::string>>{
           {{"--shard", "3/2"}, "--shard: '3/2': need 1 <= i <= n <= 10000"},
           {{"--shard", "x"}, "--shard: 'x' is not of the form i/n (e.g. 2/4)"},
           {{"--board", "nope"}, "--board: unknown board 'nope'"},
           {{"--grid", "workers=0"}, "workers"}}) {
    const auto r = bench(db, args);
    EXPECT_EQ(r.code, 2) << r.err;
    EXPECT_NE(r.err.find(expected), std::string::npos) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_FALSE(fs::exists(db));
  }
  const auto missing = k3tune(db, {"bench", "--farm", tmp_ / "missing.toml", "--op",
                                   "linear_decode", "--shape", "n=96,k=256"});
  EXPECT_EQ(missing.code, 2);
  EXPECT_NE(missing.err.find("missing.toml: no such farm file"), std::string::npos) << missing.err;
  EXPECT_FALSE(fs::exists(db));
}

}  // namespace
