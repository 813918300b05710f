// Board facts for the roofline (configs/boards/*.toml): which runs a board file describes (matched
// on the runner's environment: marchid, architecture, CPU model) and the board's published
// ceilings -- memory bandwidth in GB/s (1e9 bytes/s) and compute in GOPS (1e9 operations/s, a
// multiply-add counting 2) -- each with its source. The measured ceilings come from `k3tune probe`
// (target_probes) and are added by the roofline, not written here.
#pragma once

#include <string>
#include <vector>

#include "harness/host/verdict/run_data.h"

namespace k3reports {

struct Ceiling {
  std::string name;
  std::string kind;  // "bandwidth" (value in GB/s) or "compute" (value in GOPS)
  double value = 0;
  std::string origin;  // "published", "measured by peers", "derived", or "measured" (probe)
  std::string source;  // where the figure comes from
};

struct Board {
  std::string file, name, notes;
  std::string match_marchid, match_arch, match_cpu_model;  // empty: not checked
  std::vector<Ceiling> ceilings;
  // Every match key given equals the run's (marchid, target arch) or is contained in its CPU
  // model; a board without match keys matches nothing.
  bool matches(const k3verdict::RunData& run) const;
};

// Every *.toml in `dir`, by file name (ReportError "file:line: key: what" on bad entries; an
// absent directory gives no boards).
std::vector<Board> load_boards(const std::string& dir);
const Board* board_for(const std::vector<Board>& boards, const k3verdict::RunData& run);

}  // namespace k3reports
