#include "harness/host/store/exact_measurements.h"

#include "harness/host/store/results.h"

namespace k3store {

std::optional<double> find_exact_measurement(Connection& c, const std::string& cache_key) {
  auto s = c.prepare("SELECT value FROM exact_measurements WHERE cache_key = ?1");
  s.bind(1, cache_key);
  if (!s.step()) return std::nullopt;
  return s.real(0);
}

void insert_exact_measurement(Connection& c, const ExactMeasurementRecord& r) {
  Transaction tx(c);
  auto s = c.prepare(
      "INSERT OR IGNORE INTO exact_measurements(cache_key, identity_json, build_hash, op, cpu,"
      " method, value, measured_at, session_id) VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9)");
  s.bind(1, r.cache_key).bind(2, r.identity_json).bind(3, r.build_hash).bind(4, r.op);
  s.bind(5, r.cpu).bind(6, r.method).bind(7, r.value).bind(8, now_utc());
  s.bind_or_null(9, r.session_id);
  s.run();
  tx.commit();
}

std::int64_t exact_measurement_count(Connection& c) {
  return c.scalar_int("SELECT count(*) FROM exact_measurements");
}

}  // namespace k3store
