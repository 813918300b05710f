// Fixture databases for the report tests, built from real runner output: `k3tune bench` runs the
// real k3bench (the build under test, or a copy with bytes appended -- another build hash, the same
// code -- or a wrapper that adds calibrated work per call) into a real SQLite file; changes are
// then planted into the stored data where a test needs a known truth (a candidate's samples made
// from the baseline's own samples times a factor, an accuracy ratio raised, a checksum changed).
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/host/store/sqlite.h"
#include "tests/support/scratch_dir.h"

namespace k3test::reports {

struct Cmd {
  int code = -1;
  std::string out, err;
};

class ReportTest : public ::testing::Test {
 protected:
  void SetUp() override;

  std::string db() const { return (dir_ / "results.db").string(); }
  std::string targets() const { return (dir_ / "targets.toml").string(); }
  // Runs k3tune with --root, --db and --targets of this fixture.
  Cmd k3tune(const std::vector<std::string>& args) const;
  // Writes targets.toml with one local target using `runner`.
  void use_runner(const std::string& runner) const;
  // A runner whose repetitions report `ns` per call (+-0.5%) and nothing disturbed: the real
  // k3bench behind tests/support/synthetic-k3bench.sh, named `name` (its own build hash). Timed
  // verdicts between such runners are exact whatever the machine does.
  std::string synthetic_runner(const std::string& name, double ns) const;
  // Another build of the same code: a synthetic runner with the fixture's time per call.
  std::string copy_of_runner(const std::string& name) const;
  // A slower build: a synthetic runner `factor` times the fixture's time per call.
  std::string slower_runner(const std::string& name, double factor) const;
  static constexpr double kCallNs = 100000;  // the fixture's runners: 100 us per call
  // `k3tune --json bench --config FILE` with `config_text`; returns the run id.
  std::string bench(const std::string& config_text) const;
  std::unique_ptr<k3store::Connection> open() const;
  // The cell key of `run`'s cell of `op` whose shape JSON equals `shape`.
  std::string cell_of(const std::string& run, const std::string& op,
                      const nlohmann::json& shape) const;
  // Replaces the samples of (to_run, to_cell) by those of (from_run, from_cell): process p gets
  // the repetitions of source(p).first times source(p).second; then re-aggregates the cell.
  void plant_samples(const std::string& from_run, const std::string& from_cell,
                     const std::string& to_run, const std::string& to_cell,
                     const std::function<std::pair<int, double>(int)>& source) const;
  // Sets a JSON path of the accuracy-checked process's runner_json of (run, cell).
  void plant_accuracy(const std::string& run, const std::string& cell, const std::string& json_path,
                      const std::string& sql_value) const;
  std::string read(const std::filesystem::path& p) const;

  ScratchDir dir_{"k3reports_"};
};

// The tuner's tables (its schema migration, as the results-database contract states it), created
// when absent: the report reads them when they exist.
void create_tuning_tables(k3store::Connection& c);
void add_tuning_session(k3store::Connection& c, const std::string& id,
                        const std::string& created_at, const std::string& target,
                        const std::string& op);
void add_tuning_table(k3store::Connection& c, const std::string& id, const std::string& created_at,
                      const std::vector<std::string>& sessions, const nlohmann::json& entry);
// A tuning-table entry for linear_decode n=k=2048 with evidence in the table format's fields.
nlohmann::json decode_table_entry(double mean_ns, double speedup);

// The lines of `text`.
std::vector<std::string> lines_of(const std::string& text);
// The Markdown section starting at the line `heading` up to the next heading of the same or a
// higher level ("" when absent).
std::string section(const std::string& markdown, const std::string& heading);

}  // namespace k3test::reports
