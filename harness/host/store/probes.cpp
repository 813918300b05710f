#include "harness/host/store/probes.h"

#include "harness/host/store/results.h"
#include "harness/host/store/row_fields.h"

namespace k3store {

void insert_target_probe(Connection& c, const TargetProbeRecord& r) {
  c.run(
      "INSERT OR REPLACE INTO target_probes(target, cpu_model, measured_at, host, build_hash,"
      " membw_read_gbps, peak_f32_gflops, peak_i16_gops, probe_json)"
      " VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9)",
      r.target, r.cpu_model, r.measured_at.empty() ? now_utc() : r.measured_at, r.host,
      r.build_hash, r.membw_read_gbps, r.peak_f32_gflops, r.peak_i16_gops, r.probe_json);
}

std::optional<TargetProbeRecord> latest_target_probe(Connection& c, const std::string& target,
                                                     const std::string& cpu_model) {
  const auto read = [](const Statement& s) {
    TargetProbeRecord r;
    read_fields(s, 0, r.target, r.cpu_model, r.measured_at, r.host, r.build_hash, r.membw_read_gbps,
                r.peak_f32_gflops, r.peak_i16_gops, r.probe_json);
    return r;
  };
  return select_first_row(
      c, read,
      "SELECT target, cpu_model, measured_at, host, build_hash, membw_read_gbps, peak_f32_gflops,"
      " peak_i16_gops, probe_json FROM target_probes WHERE target = ?1 AND cpu_model = ?2"
      " ORDER BY measured_at DESC LIMIT 1",
      target, cpu_model);
}

}  // namespace k3store
