// The store's tuning rows on a real SQLite file: sessions with their measurements and points
// (tuning_sessions.h), the tables written (tuning_tables.h) and the measurement cache of exact
// objectives (exact_measurements.h).
#include "harness/host/store/exact_measurements.h"
#include "harness/host/store/tuning_sessions.h"
#include "harness/host/store/tuning_tables.h"
#include "store_fixture.h"

namespace {

using StoreTuning = StoreFile;

k3store::TuningSessionRecord session(const std::string& id, const std::string& target = "local") {
  return {id,   "k3tune tune", target, "h1", "",     "linear_decode", "{}", "",
          "{}", "racing",      7,      40,   "time", "running",       ""};
}

TEST_F(StoreTuning, ASessionIsOpenedOnceMeasuredAndFinished) {
  k3store::TuningSessionStore store(db());
  EXPECT_FALSE(k3store::has_tuning_rows(db()));
  const auto created = store.open(session("s1"));
  EXPECT_EQ(created.status, "running");
  EXPECT_TRUE(k3store::has_tuning_rows(db()));

  store.add("s1", {"a=2", 0, 1, 20.0, false, false, "", ""});
  store.add("s1", {"a=1", 0, 0, 10.0, true, false, "", "cell-a1"});
  store.add("s1", {"a=1", 1, 0, 0.0, false, true, "accuracy failure", ""});
  const auto m = store.measurements("s1");
  ASSERT_EQ(m.size(), 3u);  // by round, point, measurement
  EXPECT_EQ(m[0].point_key, "a=1");
  EXPECT_TRUE(m[0].disturbed);
  EXPECT_EQ(m[0].cell_key, "cell-a1");
  EXPECT_EQ(m[1].measurement, 1);
  EXPECT_TRUE(m[1].rejected);
  EXPECT_EQ(m[1].value, 0.0);  // stored as NULL
  EXPECT_EQ(m[1].reason, "accuracy failure");
  EXPECT_EQ(m[2].point_key, "a=2");
  EXPECT_EQ(m[2].round, 1);

  k3store::TuningPointRecord measured{
      "a=2", "linear_decode", R"({"n":64})", R"({"a":2})", "", "measured", "", 1, 20.0, 18.0, 22.0};
  k3store::TuningPointRecord rejected{
      "a=1", "linear_decode", R"({"n":64})", R"({"a":1})", "", "rejected", "accuracy failure",
      0,     std::nullopt,    std::nullopt,  std::nullopt};
  store.finish("s1", R"({"chosen":"a=2"})", {measured, rejected});
  const auto points = k3store::tuning_points(db(), "s1");
  ASSERT_EQ(points.size(), 2u);  // by point key
  EXPECT_EQ(points[0].point_key, "a=1");
  EXPECT_EQ(points[0].status, "rejected");
  EXPECT_FALSE(points[0].mean_ns.has_value());
  EXPECT_EQ(points[1].config_json, R"({"a":2})");
  EXPECT_EQ(points[1].ci_high_ns, 22.0);
  EXPECT_EQ(points[1].processes, 1);

  // Asked again: the stored session, finished, with its result.
  auto again = session("s1");
  again.run_uuid = "ignored";
  const auto stored = store.open(again);
  EXPECT_EQ(stored.status, "finished");
  EXPECT_EQ(stored.result_json, R"({"chosen":"a=2"})");
  EXPECT_EQ(stored.run_uuid, "");  // none was stored
}

TEST_F(StoreTuning, SessionsOfATargetNewestFirstAndTheirMeasurementsOfACell) {
  k3store::TuningSessionStore store(db());
  store.open(session("s1"));
  store.open(session("s2"));
  store.open(session("q1", "qemu"));
  store.add("s1", {"a=1", 0, 0, 10.0, false, false, "", "cell-x"});
  store.add("s1", {"a=1", 1, 1, 0.0, false, true, "lost board", "cell-x"});
  store.add("s2", {"a=1", 0, 0, 12.0, true, false, "", "cell-x"});
  store.add("s2", {"a=9", 0, 0, 99.0, false, false, "", "cell-y"});
  store.finish("s2", "{}", {});

  const auto sessions = k3store::tuning_sessions(db(), "local", "9999", 5);
  ASSERT_EQ(sessions.size(), 2u);
  EXPECT_EQ(sessions[0].seed, 7u);
  EXPECT_EQ(sessions[0].budget, 40);
  EXPECT_EQ(sessions[0].strategy, "racing");
  EXPECT_FALSE(sessions[0].created_at.empty());
  EXPECT_EQ(k3store::tuning_sessions(db(), "local", "9999", 1).size(), 1u);
  EXPECT_TRUE(k3store::tuning_sessions(db(), "local", "2000-01-01T00:00:00Z", 5).empty());
  for (const auto& s : sessions)
    EXPECT_EQ(s.finished_at.empty(), s.session_id == "s1") << s.session_id;

  // The rejected measurement is not served; the disturbed one is, flagged.
  const auto x = k3store::stored_measurements_of_cell(db(), "cell-x");
  ASSERT_EQ(x.size(), 2u);
  EXPECT_EQ(x[0].value + x[1].value, 22.0);
  EXPECT_NE(x[0].disturbed, x[1].disturbed);
  EXPECT_TRUE(k3store::stored_measurements_of_cell(db(), "cell-z").empty());
}

TEST_F(StoreTuning, TheLayerOfASessionComesFromItsProcesses) {
  k3store::TuningSessionStore store(db());
  store.open(session("s1"));
  EXPECT_FALSE(k3store::session_process_path(db(), "s1").has_value());
  build("h1");
  run("r1", "h1", {"c1"});
  process("r1", "c1", 0, {5});
  store.add("s1", {"a=1", 0, 0, 5.0, false, false, "", "c1"});
  EXPECT_EQ(k3store::session_process_path(db(), "s1"), std::optional<std::string>("rvv"));
}

TEST_F(StoreTuning, TablesAreKeptOnceAndFoundByTheirSessions) {
  k3store::insert_tuning_table(db(), {"t1", "", R"(["s1","s2"])", "out/a.json", R"({"v":1})"});
  k3store::insert_tuning_table(db(), {"t1", "", R"(["s9"])", "elsewhere.json", R"({"v":1})"});
  k3store::insert_tuning_table(db(), {"t2", "", R"(["s2"])", "", R"({"v":2})"});
  const auto all = k3store::all_tuning_tables(db());
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].table_id, "t1");
  EXPECT_EQ(all[0].path, "out/a.json");  // the first write stays
  EXPECT_FALSE(all[0].created_at.empty());
  EXPECT_EQ(all[1].path, "");
  EXPECT_EQ(k3store::tables_of_session(db(), "s1").size(), 1u);
  EXPECT_EQ(k3store::tables_of_session(db(), "s2").size(), 2u);
  EXPECT_TRUE(k3store::tables_of_session(db(), "s9").empty());
  EXPECT_TRUE(k3store::tables_of_session(db(), "s").empty());  // a whole id, not a prefix
  EXPECT_TRUE(k3store::has_tuning_rows(db()));
}

TEST_F(StoreTuning, AnExactCountIsStoredOnceUnderItsKey) {
  EXPECT_FALSE(k3store::find_exact_measurement(db(), "key1").has_value());
  EXPECT_EQ(k3store::exact_measurement_count(db()), 0);
  k3store::insert_exact_measurement(
      db(), {"key1", "{}", "h1", "linear_decode", "rv64,vlen=1024", "insns", 1234.5, "s1"});
  k3store::insert_exact_measurement(
      db(), {"key1", "{}", "h1", "linear_decode", "rv64,vlen=1024", "insns", 9999.0, ""});
  k3store::insert_exact_measurement(
      db(), {"key2", "{}", "h1", "linear_decode", "rv64,vlen=256", "insns", 42.0, ""});
  EXPECT_EQ(k3store::find_exact_measurement(db(), "key1"), std::optional<double>(1234.5));
  EXPECT_EQ(k3store::find_exact_measurement(db(), "key2"), std::optional<double>(42.0));
  EXPECT_EQ(k3store::exact_measurement_count(db()), 2);
  auto s = db().prepare("SELECT session_id IS NULL FROM exact_measurements WHERE cache_key = ?1");
  s.bind(1, std::string("key2"));
  ASSERT_TRUE(s.step());
  EXPECT_EQ(s.integer(0), 1);  // "" is stored as no session
}

}  // namespace
