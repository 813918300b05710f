// The measurement cache of exact objectives (schema: database.cpp, migration 6 -> 7): an
// instruction count stored once under the hash of what determines it (the tuner's
// ExactIdentity), so a later session, strategy or campaign asking for the same count gets it back
// without running qemu.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "harness/host/store/sqlite.h"

namespace k3store {

struct ExactMeasurementRecord {
  std::string cache_key;      // SHA-256 of identity_json
  std::string identity_json;  // build, runner arguments, env, CPU, method
  std::string build_hash, op, cpu, method;
  double value = 0;        // instructions per call
  std::string session_id;  // the tuning session that counted it first ("" for none)
};

std::optional<double> find_exact_measurement(Connection& c, const std::string& cache_key);
// The first value stored under a key stays.
void insert_exact_measurement(Connection& c, const ExactMeasurementRecord& r);
std::int64_t exact_measurement_count(Connection& c);

}  // namespace k3store
