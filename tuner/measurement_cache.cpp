#include "tuner/measurement_cache.h"

#include <fmt/format.h>

#include "harness/host/bench/provenance.h"
#include "harness/host/store/exact_measurements.h"

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
  return k3store::find_exact_measurement(db_, id.key);
}

void MeasurementCache::put(const ExactIdentity& id, double value, const std::string& session_id) {
  k3store::insert_exact_measurement(
      db_, {id.key, id.what.dump(), id.build_hash, id.op, id.cpu, id.method, value, session_id});
}

std::int64_t MeasurementCache::size() {
  return k3store::exact_measurement_count(db_);
}

}  // namespace k3tuner
