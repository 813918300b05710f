// Timing through Google Benchmark: warm-up calls (and, unless given, a calibration pass for the
// number of calls per repetition), then R repetitions of the case's timed call with a fixed call
// count, so no repetition is spent on Google Benchmark's own iteration-count estimation. Each
// repetition's mean time per call is kept (nothing aggregated away), with what the machine did
// around it: the CPU of the calling thread, CPU migrations and context switches (perf software
// counters), and the clock and temperature readings before and after.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/runner/call_marks.h"
#include "harness/runner/disturbance.h"
#include "harness/runner/extra_work.h"
#include "harness/runner/op_case.h"
#include "harness/runner/perf_counters.h"
#include "harness/runner/scheduling.h"

namespace k3runner {

struct Repetition {
  double real_ns = 0;  // wall time per call
  double cpu_ns = 0;   // CPU time of the calling thread per call
  std::int64_t iterations = 0;
  std::map<std::string, double>
      counters;                         // hardware and software counters per call (when available)
  int cpu_before = -1, cpu_after = -1;  // CPU of the calling thread around the repetition
  double migrations = -1;               // CPU migrations of all threads during it (-1: unknown)
  double cpu_share = -1;                // calling thread's CPU time / wall time
  SchedulingSnapshot taken;             // run delay and steal during it (scheduling.h)
  nlohmann::json readings_before, readings_after;  // cpufreq / thermal (environment_readings)
  std::vector<std::string> flags;  // disturbances seen: "cpu-migration", "frequency-change", ...
  char side = 0;  // 'A' / 'B' with alternating extra work or a second case (alternation.h), else 0
};

struct MeasureOptions {
  int repetitions = 5;
  int warmup = 2;               // untimed calls before measuring (at least 1 when calibrating)
  double min_time_s = 0.1;      // per repetition, when iterations == 0
  std::int64_t iterations = 0;  // fixed calls per repetition (0: calibrated from the warm-up)
  bool pinned = false;          // the threads are pinned: any migration is a disturbance
  bool busy_wait = true;        // idle workers spin: the calling thread is busy throughout
  CallMarks* marks = nullptr;  // instruction counting: every call of the case marked (call_marks.h)
};

struct Calibration {
  std::int64_t iterations = 0;
  std::string source;  // "given" or "calibration pass"
  int warmup_calls = 0;
  double warmup_s = 0;          // wall time of all warm-up calls
  double call_ns_estimate = 0;  // per call, from the warm-up (0 when not calibrated)
};

struct Measurement {
  Calibration calibration;
  std::vector<Repetition> repetitions;
  double measured_s = 0;  // wall time of the repetitions, Google Benchmark's bookkeeping included
};

// counters may be null; extra work (if enabled) runs after every timed call, inside the timing.
// side_b (k3bench --params-b): a second case of the same op and shape; the repetitions alternate
// `c` (side A) and side_b in the order of alternation.h, each preceded by one untimed call of its
// case (which brings that case's code and state back after the other side ran), with the call
// count calibrated on side A. Both cases are warmed up first.
Measurement measure(OpCase& c, const MeasureOptions& opt, const PerfCounters* counters = nullptr,
                    const ExtraWork* extra = nullptr, OpCase* side_b = nullptr);

}  // namespace k3runner
