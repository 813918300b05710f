#include "harness/host/store/probes.h"

#include "harness/host/store/results.h"

namespace k3store {

void insert_target_probe(Connection& c, const TargetProbeRecord& r) {
  auto s = c.prepare(
      "INSERT OR REPLACE INTO target_probes(target, cpu_model, measured_at, host, build_hash,"
      " membw_read_gbps, peak_f32_gflops, peak_i16_gops, probe_json)"
      " VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9)");
  s.bind(1, r.target)
      .bind(2, r.cpu_model)
      .bind(3, r.measured_at.empty() ? now_utc() : r.measured_at);
  s.bind(4, r.host).bind(5, r.build_hash).bind(6, r.membw_read_gbps).bind(7, r.peak_f32_gflops);
  s.bind(8, r.peak_i16_gops).bind(9, r.probe_json);
  s.run();
}

std::optional<TargetProbeRecord> latest_target_probe(Connection& c, const std::string& target,
                                                     const std::string& cpu_model) {
  auto s = c.prepare(
      "SELECT target, cpu_model, measured_at, host, build_hash, membw_read_gbps, peak_f32_gflops,"
      " peak_i16_gops, probe_json FROM target_probes WHERE target = ?1 AND cpu_model = ?2"
      " ORDER BY measured_at DESC LIMIT 1");
  s.bind(1, target).bind(2, cpu_model);
  if (!s.step()) return std::nullopt;
  TargetProbeRecord r;
  r.target = s.text(0);
  r.cpu_model = s.text(1);
  r.measured_at = s.text(2);
  r.host = s.text(3);
  r.build_hash = s.text(4);
  auto opt = [&](int col) {
    return s.is_null(col) ? std::nullopt : std::optional<double>(s.real(col));
  };
  r.membw_read_gbps = opt(5);
  r.peak_f32_gflops = opt(6);
  r.peak_i16_gops = opt(7);
  r.probe_json = s.text(8);
  return r;
}

}  // namespace k3store
