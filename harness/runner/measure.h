// Timing through Google Benchmark: warm-up calls, then R repetitions of the case's timed call;
// each repetition's mean time per iteration is kept (nothing aggregated away).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "extra_work.h"
#include "op_case.h"
#include "perf_counters.h"

namespace k3bench {

struct Repetition {
  double real_ns = 0;  // wall time per call
  double cpu_ns = 0;   // CPU time of the calling thread per call
  std::int64_t iterations = 0;
  std::map<std::string, double> counters;  // hardware counters per call (when available)
};

struct MeasureOptions {
  int repetitions = 5;
  int warmup = 2;
  double min_time_s = 0.1;   // per repetition, when iterations == 0
  std::int64_t iterations = 0;  // fixed calls per repetition (0: chosen by Google Benchmark)
};

// counters may be null; extra work (if enabled) runs after every timed call, inside the timing.
std::vector<Repetition> measure(OpCase& c, const MeasureOptions& opt, const PerfCounters* counters = nullptr,
                                const ExtraWork* extra = nullptr);

}  // namespace k3bench
