// Tuning sessions in the results database (schema: database.cpp, migration 3 -> 4): the session
// row, every measurement as it is taken (committed at once, so an interrupted tuning loses at most
// the measurement in flight), a summary row per configuration when it finishes. A session's id is
// a hash of what was asked (the tuner's): running the same `k3tune tune` again continues it,
// reusing every stored measurement.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "harness/host/store/sqlite.h"

namespace k3store {

struct TuningSessionRecord {
  std::string session_id, command, target, build_hash, run_uuid, op, shape_json, model, space_json,
      strategy;
  std::uint64_t seed = 1;
  int budget = 0;
  std::string objective;  // time | instructions | synthetic
  std::string status = "running";
  std::string result_json;
  std::string created_at = {}, finished_at = {};  // read only; finished_at "" while running
};

// One measurement of a configuration (the point "k=v,..."); value is ns or instructions per call.
struct TuningMeasurementRecord {
  std::string point_key;
  int measurement = 0, round = 0;
  double value = 0;  // 0 when rejected
  bool disturbed = false, rejected = false;
  std::string reason, cell_key;
};

// A configuration's summary when its session finishes.
struct TuningPointRecord {
  std::string point_key, op, shape_json, config_json, cell_key;
  std::string status;  // measured | rejected
  std::string reason;
  int processes = 0;  // counted measurements
  std::optional<double> mean_ns, ci_low_ns, ci_high_ns;
};

// The sessions of one database (a tuning run stores through it; null: nothing is stored).
class TuningSessionStore {
 public:
  explicit TuningSessionStore(Connection& db) : db_(db) {}
  // The session row: created when new; the existing one (and its status) otherwise.
  TuningSessionRecord open(const TuningSessionRecord& wanted);
  std::vector<TuningMeasurementRecord> measurements(const std::string& session_id);
  void add(const std::string& session_id, const TuningMeasurementRecord& m);
  // The points and the session's result in one transaction.
  void finish(const std::string& session_id, const std::string& result_json,
              const std::vector<TuningPointRecord>& points);
  Connection& db() { return db_; }

 private:
  Connection& db_;
};

// Whether the tuner has written to this database (sessions or tables).
bool has_tuning_rows(Connection& c);
// Sessions of `target` created up to `until` (UTC text), newest first, at most `limit`.
std::vector<TuningSessionRecord> tuning_sessions(Connection& c, const std::string& target,
                                                 const std::string& until, std::int64_t limit);
// The session's points in point-key order.
std::vector<TuningPointRecord> tuning_points(Connection& c, const std::string& session_id);
// Time measurements of a cell kept by any session (rejected ones left out), oldest session
// first: what `tune --replay` serves.
std::vector<TuningMeasurementRecord> stored_measurements_of_cell(Connection& c,
                                                                 const std::string& cell_key);
// The kernel layer a process of the session's measurements took, if any process recorded one.
std::optional<std::string> session_process_path(Connection& c, const std::string& session_id);

}  // namespace k3store
