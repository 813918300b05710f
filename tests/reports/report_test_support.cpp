#include "report_test_support.h"

#include <unistd.h>

#include <fstream>
#include <sstream>

#include "harness/host/store/database.h"
#include "harness/host/targets/process.h"
#include "harness/host/store/results.h"
#include "harness/host/bench/sweep.h"

namespace fs = std::filesystem;

namespace k3test::reports {

void ReportTest::SetUp() {
  use_runner(synthetic_runner("k3bench-base", kCallNs));
}

void ReportTest::use_runner(const std::string& runner) const {
  std::ofstream(targets()) << "[targets.local]\nkind = \"local\"\nrunner = \"" << runner
                           << "\"\ntimeout_s = 120\n";
}

Cmd ReportTest::k3tune(const std::vector<std::string>& args) const {
  std::vector<std::string> argv = {K3TUNE_PATH, "--root",    K3TUNE_ROOT, "--db",
                                   db(),        "--targets", targets(),   "-q"};
  argv.insert(argv.end(), args.begin(), args.end());
  const auto r = k3targets::run_process(argv, k3targets::ProcessOptions::with_timeout(900));
  return {r.signal ? 128 + r.signal : r.exit_code, r.out, r.err};
}

std::string ReportTest::synthetic_runner(const std::string& name, double ns) const {
  const fs::path p = dir_ / name;
  std::ofstream(p) << "#!/bin/sh\n# " << name << "\nexec bash '" << K3TUNE_ROOT
                   << "/tests/support/synthetic-k3bench.sh' '" << K3BENCH_PATH << "' " << ns
                   << " \"$@\"\n";
  fs::permissions(p, fs::perms::owner_all);
  return p.string();
}

std::string ReportTest::copy_of_runner(const std::string& name) const {
  return synthetic_runner(name, kCallNs);
}

std::string ReportTest::slower_runner(const std::string& name, double factor) const {
  return synthetic_runner(name, kCallNs * factor);
}

std::string ReportTest::bench(const std::string& config_text) const {
  static int n = 0;
  const fs::path config = dir_ / ("sweep" + std::to_string(n++) + ".toml");
  std::ofstream(config) << config_text;
  const auto r = k3tune({"--json", "bench", "--config", config.string(), "--no-remeasure"});
  // Failed cells are part of some fixtures (exit 3); anything else is a broken fixture.
  EXPECT_TRUE(r.code == 0 || r.code == 3) << r.err;
  return nlohmann::json::parse(r.out).at("run_uuid").get<std::string>();
}

std::unique_ptr<k3store::Connection> ReportTest::open() const {
  return k3store::open_database(db(), k3store::OpenMode::kCreateOrUpdate);
}

std::string ReportTest::cell_of(const std::string& run, const std::string& op,
                                const nlohmann::json& shape) const {
  auto c = open();
  auto s = c->prepare(
      "SELECT c.cell_key FROM cells c JOIN runs r ON c.build_hash = r.build_hash"
      " WHERE r.run_uuid = ?1 AND c.op = ?2 AND c.shape_json = ?3"
      " AND c.cell_key IN (SELECT value FROM json_each(r.order_json))");
  s.bind(1, run).bind(2, op).bind(3, shape.dump());
  EXPECT_TRUE(s.step()) << "no " << op << " " << shape.dump() << " in run " << run;
  return s.text(0);
}

void ReportTest::plant_samples(const std::string& from_run, const std::string& from_cell,
                               const std::string& to_run, const std::string& to_cell,
                               const std::function<std::pair<int, double>(int)>& source) const {
  auto c = open();
  k3store::Transaction tx(*c);
  auto targets = c->prepare(
      "SELECT process_index, rep_index FROM samples WHERE run_uuid = ?1 AND cell_key = ?2");
  targets.bind(1, to_run).bind(2, to_cell);
  std::vector<std::pair<int, int>> slots;
  while (targets.step())
    slots.emplace_back(static_cast<int>(targets.integer(0)), static_cast<int>(targets.integer(1)));
  ASSERT_FALSE(slots.empty());
  auto read = c->prepare(
      "SELECT ns FROM samples WHERE run_uuid = ?1 AND cell_key = ?2 AND process_index = ?3 AND "
      "rep_index = ?4");
  auto write = c->prepare(
      "UPDATE samples SET ns = ?1 WHERE run_uuid = ?2 AND cell_key = ?3 AND process_index = ?4 AND "
      "rep_index = ?5");
  for (const auto& [p, rep] : slots) {
    const auto [q, factor] = source(p);
    read.bind(1, from_run).bind(2, from_cell).bind(3, q).bind(4, rep);
    ASSERT_TRUE(read.step()) << "source process " << q << " repetition " << rep;
    const double ns = read.real(0) * factor;
    read.reset();
    write.bind(1, ns).bind(2, to_run).bind(3, to_cell).bind(4, p).bind(5, rep);
    write.run();
  }
  // The aggregate as the sweep would have written it from these samples.
  std::vector<k3store::ProcessRef> refs;
  auto procs = c->prepare(
      "SELECT process_index FROM processes WHERE run_uuid = ?1 AND cell_key = ?2 AND status = 'ok'"
      " ORDER BY process_index");
  procs.bind(1, to_run).bind(2, to_cell);
  while (procs.step()) refs.push_back({to_run, static_cast<int>(procs.integer(0))});
  k3store::AggregateRecord a = k3bench::aggregate_of(k3store::process_times(*c, to_cell, refs), {});
  a.run_uuid = to_run;
  a.cell_key = to_cell;
  a.source_runs_json = nlohmann::json::array({to_run}).dump();
  a.stop_reason = "fixed count";
  k3store::insert_aggregate(*c, a);
  tx.commit();
}

void ReportTest::plant_accuracy(const std::string& run, const std::string& cell,
                                const std::string& json_path, const std::string& sql_value) const {
  auto c = open();
  c->exec("UPDATE processes SET runner_json = json_set(runner_json, '" + json_path + "', " +
          sql_value + ") WHERE run_uuid = '" + run + "' AND cell_key = '" + cell +
          "' AND json_type(runner_json, '$.accuracy') = 'object'");
  ASSERT_EQ(c->changes(), 1) << "no accuracy-checked process of " << cell;
}

std::string ReportTest::read(const fs::path& p) const {
  std::ifstream in(p);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

void create_tuning_tables(k3store::Connection& c) {
  c.exec(R"sql(
CREATE TABLE IF NOT EXISTS tuning_sessions(session_id TEXT PRIMARY KEY, created_at TEXT NOT NULL,
  finished_at TEXT, command TEXT NOT NULL, target TEXT NOT NULL, build_hash TEXT NOT NULL, run_uuid TEXT,
  op TEXT NOT NULL, shape_json TEXT NOT NULL, model TEXT, space_json TEXT NOT NULL, strategy TEXT NOT NULL,
  seed INTEGER NOT NULL, budget INTEGER NOT NULL, objective TEXT NOT NULL,
  status TEXT NOT NULL CHECK(status IN ('running', 'finished')), result_json TEXT);
CREATE TABLE IF NOT EXISTS tuning_measurements(session_id TEXT NOT NULL, point_key TEXT NOT NULL,
  measurement INTEGER NOT NULL, round INTEGER NOT NULL, value REAL, disturbed INTEGER NOT NULL DEFAULT 0,
  rejected INTEGER NOT NULL DEFAULT 0, reason TEXT, cell_key TEXT, PRIMARY KEY(session_id, point_key, measurement));
CREATE TABLE IF NOT EXISTS tuning_points(session_id TEXT NOT NULL, point_key TEXT NOT NULL, op TEXT NOT NULL,
  shape_json TEXT NOT NULL, config_json TEXT NOT NULL, cell_key TEXT,
  status TEXT NOT NULL CHECK(status IN ('measured', 'rejected')), reason TEXT, processes INTEGER NOT NULL,
  mean_ns REAL, ci_low_ns REAL, ci_high_ns REAL, PRIMARY KEY(session_id, point_key));
CREATE TABLE IF NOT EXISTS tuning_tables(table_id TEXT PRIMARY KEY, created_at TEXT NOT NULL,
  sessions_json TEXT NOT NULL, path TEXT, table_json TEXT NOT NULL);
)sql");
}

void add_tuning_session(k3store::Connection& c, const std::string& id,
                        const std::string& created_at, const std::string& target,
                        const std::string& op) {
  auto s = c.prepare(
      "INSERT INTO tuning_sessions(session_id, created_at, finished_at, command, target, "
      "build_hash, op,"
      " shape_json, space_json, strategy, seed, budget, objective, status)"
      " VALUES (?1, ?2, ?2, 'k3tune tune', ?3, 'b', ?4, '{}', '{}', 'exhaustive', 1, 100, 'time', "
      "'finished')");
  s.bind(1, id).bind(2, created_at).bind(3, target).bind(4, op);
  s.run();
}

void add_tuning_table(k3store::Connection& c, const std::string& id, const std::string& created_at,
                      const std::vector<std::string>& sessions, const nlohmann::json& entry) {
  const nlohmann::json table = {
      {"schema", "k3tune.tuning-table/1"}, {"kernel_abi", 1}, {"entries", {entry}}};
  auto s =
      c.prepare("INSERT INTO tuning_tables VALUES (?1, ?2, ?3, 'tables/' || ?1 || '.json', ?4)");
  s.bind(1, id).bind(2, created_at).bind(3, nlohmann::json(sessions).dump()).bind(4, table.dump());
  s.run();
}

nlohmann::json decode_table_entry(double mean_ns, double speedup) {
  return {{"id", "linear_decode/rvv/n2048/k2048"},
          {"op", "linear_decode"},
          {"class", {{"path", "rvv"}, {"n", 2048}, {"k", 2048}}},
          {"params", {{"workers", 2}, {"tile_n", 64}}},
          {"hp", false},
          {"evidence",
           {{"mean", mean_ns},
            {"unit", "ns per call"},
            {"ci95", {mean_ns - 20, mean_ns + 20}},
            {"processes", 12},
            {"default_mean", mean_ns * speedup},
            {"speedup", speedup},
            {"speedup_ci95", {speedup - 0.1, speedup + 0.1}},
            {"paired", true},
            {"session", "s1"}}}};
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

std::string section(const std::string& markdown, const std::string& heading) {
  const auto level = heading.find_first_not_of('#');
  std::string out;
  bool inside = false;
  for (const auto& line : lines_of(markdown)) {
    if (inside && line.rfind("#", 0) == 0 && line.find_first_not_of('#') <= level) break;
    if (!inside && line.rfind(heading, 0) == 0) inside = true;
    if (inside) out += line + "\n";
  }
  return out;
}

}  // namespace k3test::reports
