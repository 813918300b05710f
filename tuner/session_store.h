// Tuning sessions in the results database: the session row, every measurement as it is taken
// (committed at once, so an interrupted tuning loses at most the measurement in flight), a
// summary row per configuration, and the tables written. A session's id is a hash of what was
// asked (op, shape, space, strategy, seed, budget, objective, target, build): running the same
// `k3tune tune` again continues it, reusing every stored measurement.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/host/store/sqlite.h"

namespace k3tuner {

struct SessionRecord {
  std::string session_id, command, target, build_hash, run_uuid, op, shape_json, model, space_json, strategy;
  std::uint64_t seed = 1;
  int budget = 0;
  std::string objective;
  std::string status = "running";
  std::string result_json;
};

struct StoredMeasurement {
  std::string point_key;
  int measurement = 0, round = 0;
  double value = 0;
  bool disturbed = false, rejected = false;
  std::string reason, cell_key;
};

class SessionStore {
 public:
  explicit SessionStore(k3store::Connection& db) : db_(db) {}
  // The session row: created when new; the existing one (and its status) otherwise.
  SessionRecord open(const SessionRecord& wanted);
  std::vector<StoredMeasurement> measurements(const std::string& session_id);
  void add(const std::string& session_id, const StoredMeasurement& m);
  void finish(const std::string& session_id, const nlohmann::json& result,
              const std::vector<nlohmann::json>& points);  // points: one object per configuration
  void add_table(const std::string& table_id, const nlohmann::json& sessions, const std::string& path,
                 const std::string& table_json);
  k3store::Connection& db() { return db_; }

 private:
  k3store::Connection& db_;
};

}  // namespace k3tuner
