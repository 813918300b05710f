// The measurement cache of exact objectives. An instruction count depends only on what runs: the
// runner build, its arguments (op, shape, every parameter and setting, the layer path), its
// environment, the emulated CPU (VLEN) and how the count is taken. So it is stored once under a
// hash of exactly those, and every later tuning session, strategy, space or campaign that asks for
// the same count gets it back without running qemu (changing a space re-counts only the
// configurations never counted). Rejections (accuracy failures, runner errors, a lost board) are
// not cached: a transient failure must not stick.
//
// Time measurements are not served from here to live sessions: they are evidence only paired with
// the rounds they ran in, and the same cell's median moves by 1.4x between runs on a shared
// machine. `tune --replay` reads them from the sessions that took them instead (ReplayObjective).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/host/store/sqlite.h"

namespace k3tuner {

// What determines one exact count, as a canonical JSON object, and its key (SHA-256 of its text).
struct ExactIdentity {
  nlohmann::json what;
  std::string key;
  std::string op, cpu, method, build_hash;
};

// `runner_args`: the counted process's arguments without its call count; `emulator`: the qemu
// prefix (its -cpu value is what matters: VLEN and extensions; paths such as -L are left out).
ExactIdentity exact_identity(const std::string& method, const std::string& build_hash,
                             const std::vector<std::string>& emulator,
                             std::vector<std::string> runner_args,
                             const std::map<std::string, std::string>& env);

// The cache's rows are the store's (harness/host/store/exact_measurements.h); this keys them by
// the identity above.
class MeasurementCache {
 public:
  explicit MeasurementCache(k3store::Connection& db) : db_(db) {}
  std::optional<double> find(const ExactIdentity& id);
  void put(const ExactIdentity& id, double value, const std::string& session_id);
  std::int64_t size();

 private:
  k3store::Connection& db_;
};

}  // namespace k3tuner
