// The roofline of a run: each cell's achieved throughput placed against the ceilings of the
// machine it ran on. A cell's point: arithmetic intensity = operations / bytes of one call (x),
// achieved GOPS = operations / mean time (y), with its GB/s = bytes / mean time alongside. The
// ceilings: the matching board file's published figures (boards.h) and what `k3tune probe`
// measured on that target and CPU model (streaming read bandwidth, compute peaks of the runner's
// own code); without a probe, a membw cell of the run itself stands in for the bandwidth.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "reports/boards.h"
#include "harness/host/store/probes.h"
#include "harness/host/verdict/run_data.h"

namespace k3reports {

struct RooflinePoint {
  std::string label, op, path;
  double intensity = 0;  // operations per byte
  double gops = 0, gbps = 0;
  double mean_ns = 0;
};

struct Roofline {
  std::string board, board_file;  // empty: no board file matched
  std::vector<std::string> notes;
  std::vector<Ceiling> ceilings;  // published first, then measured
  std::vector<RooflinePoint> points;
  std::optional<k3store::TargetProbeRecord> probe;
};

Roofline build_roofline(const k3verdict::RunData& run, const std::vector<Board>& boards,
                        const std::optional<k3store::TargetProbeRecord>& probe);

}  // namespace k3reports
