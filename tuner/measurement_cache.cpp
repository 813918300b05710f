#include "tuner/measurement_cache.h"

#include <fmt/format.h>

#include "harness/host/bench/provenance.h"
#include "harness/host/store/results.h"

namespace k3tuner {

ExactIdentity exact_identity(const std::string& method, const std::string& build_hash,
                             const std::vector<std::string>& emulator,
                             std::vector<std::string> runner_args,
                             const std::map<std::string, std::string>& env) {
  ExactIdentity id;
  id.method = method;
  id.build_hash = build_hash;
  id.cpu = "default";
  for (std::size_t i = 0; i + 1 < emulator.size(); ++i)
    if (emulator[i] == "-cpu") id.cpu = emulator[i + 1];
  // The call count differs between the processes of one count; it is part of the method.
  for (std::size_t i = 0; i + 1 < runner_args.size(); ++i)
    if (runner_args[i] == "--iterations" || runner_args[i] == "--min-time") {
      runner_args.erase(runner_args.begin() + static_cast<std::ptrdiff_t>(i),
                        runner_args.begin() + static_cast<std::ptrdiff_t>(i) + 2);
      break;
    }
  for (std::size_t i = 0; i + 1 < runner_args.size(); ++i)
    if (runner_args[i] == "--op") id.op = runner_args[i + 1];
  id.what = {{"method", method},
             {"build", build_hash},
             {"cpu", id.cpu},
             {"args", runner_args},
             {"env", env}};
  id.key = k3bench::sha256_text(id.what.dump());
  return id;
}

std::optional<double> MeasurementCache::find(const ExactIdentity& id) {
  auto s = db_.prepare("SELECT value FROM exact_measurements WHERE cache_key = ?1");
  s.bind(1, id.key);
  if (!s.step()) return std::nullopt;
  return s.real(0);
}

void MeasurementCache::put(const ExactIdentity& id, double value, const std::string& session_id) {
  k3store::Transaction tx(db_);
  auto s = db_.prepare(
      "INSERT OR IGNORE INTO exact_measurements(cache_key, identity_json, build_hash, op, cpu, "
      "method, value,"
      " measured_at, session_id) VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9)");
  s.bind(1, id.key).bind(2, id.what.dump()).bind(3, id.build_hash).bind(4, id.op).bind(5, id.cpu);
  s.bind(6, id.method).bind(7, value).bind(8, k3store::now_utc());
  if (session_id.empty())
    s.bind_null(9);
  else
    s.bind(9, session_id);
  s.run();
  tx.commit();
}

std::int64_t MeasurementCache::size() {
  return db_.scalar_int("SELECT count(*) FROM exact_measurements");
}

}  // namespace k3tuner
