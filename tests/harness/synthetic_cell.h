// The cell the synthetic-runner tests measure: its time is the noise model's base plus
// `extra_work_ns` (synthetic_runner.h), so every injected difference has an exactly known size.
#pragma once

#include "harness/host/bench/grid.h"

namespace k3test {

inline k3bench::CellSpec synthetic_cell(double extra_work_ns = 0) {
  k3bench::CellSpec c;
  c.op = "synthetic";
  c.shape = {{"n", 1}};
  c.params = nlohmann::json::object();
  c.settings.extra_work_ns = extra_work_ns;
  return c;
}

}  // namespace k3test
