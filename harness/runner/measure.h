// Timing through Google Benchmark: warm-up calls, then R repetitions of the case's timed call;
// each repetition's mean time per iteration is kept (nothing aggregated away).
#pragma once

#include <cstdint>
#include <vector>

#include "op_case.h"

namespace k3bench {

struct Repetition {
  double real_ns = 0;  // wall time per call
  double cpu_ns = 0;   // CPU time of the calling thread per call
  std::int64_t iterations = 0;
};

struct MeasureOptions {
  int repetitions = 5;
  int warmup = 2;
  double min_time_s = 0.1;   // per repetition, when iterations == 0
  std::int64_t iterations = 0;  // fixed calls per repetition (0: chosen by Google Benchmark)
};

std::vector<Repetition> measure(OpCase& c, const MeasureOptions& opt);

}  // namespace k3bench
