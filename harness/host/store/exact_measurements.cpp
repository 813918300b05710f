#include "harness/host/store/exact_measurements.h"

#include "harness/host/store/results.h"

namespace k3store {

std::optional<double> find_exact_measurement(Connection& c, const std::string& cache_key) {
  auto s = c.query("SELECT value FROM exact_measurements WHERE cache_key = ?1", cache_key);
  if (!s.step()) return std::nullopt;
  return s.real(0);
}

void insert_exact_measurement(Connection& c, const ExactMeasurementRecord& r) {
  Transaction tx(c);
  c.run(
      "INSERT OR IGNORE INTO exact_measurements(cache_key, identity_json, build_hash, op, cpu,"
      " method, value, measured_at, session_id) VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9)",
      r.cache_key, r.identity_json, r.build_hash, r.op, r.cpu, r.method, r.value, now_utc(),
      NullIfEmpty{r.session_id});
  tx.commit();
}

std::int64_t exact_measurement_count(Connection& c) {
  return c.scalar_int("SELECT count(*) FROM exact_measurements");
}

}  // namespace k3store
