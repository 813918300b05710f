// What `k3tune probe` measured on a target, kept for the reports: the measured ceilings of the
// roofline (streaming read bandwidth from the membw op, compute peaks from the peak op), with the
// whole probe document for provenance. One row per probe; reports use the latest one of the
// target and CPU model a run was measured on.
#pragma once

#include <optional>
#include <string>

#include "harness/host/store/sqlite.h"

namespace k3store {

struct TargetProbeRecord {
  std::string target, cpu_model, measured_at, host, build_hash;
  std::optional<double> membw_read_gbps;  // GB/s (1e9 bytes per second)
  std::optional<double> peak_f32_gflops;  // 1e9 float32 operations per second (mul + add = 2)
  std::optional<double> peak_i16_gops;    // 1e9 uint16 operations per second
  std::string probe_json = "{}";
};

void insert_target_probe(Connection& c, const TargetProbeRecord& r);
// The most recent probe of `target` on `cpu_model`, or nothing.
std::optional<TargetProbeRecord> latest_target_probe(Connection& c, const std::string& target,
                                                     const std::string& cpu_model);

}  // namespace k3store
