#include "harness/runner/measure.h"

#include <sched.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <exception>
#include <stdexcept>

#include <benchmark/benchmark.h>

#include "harness/runner/alternation.h"
#include "harness/runner/call_marks.h"
#include "harness/runner/environment.h"

namespace k3runner {
namespace {

using Clock = std::chrono::steady_clock;

class CollectingReporter final : public benchmark::BenchmarkReporter {
 public:
  explicit CollectingReporter(std::vector<Repetition>& out) : out_(out) {}
  bool ReportContext(const Context&) override { return true; }
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const auto& run : runs) {
      if (run.run_type != Run::RT_Iteration) continue;  // drop GB's own aggregates
      if (run.error_occurred) {  // never thrown here: Google Benchmark's frames are below
        if (error_.empty()) error_ = run.error_message;
        continue;
      }
      // The repetition's side data was recorded by the benchmark function in the same order.
      Repetition& rep = out_.at(next_++);
      rep.real_ns = run.GetAdjustedRealTime();
      rep.cpu_ns = run.GetAdjustedCPUTime();
      rep.iterations = run.iterations;
      for (const auto& [name, counter] : run.counters) rep.counters[name] = counter.value;
    }
  }
  const std::string& error() const { return error_; }

 private:
  std::vector<Repetition>& out_;
  std::size_t next_ = 0;
  std::string error_;
};

// Warm-up: at least the requested number of calls and one full cycle of the case's rotation
// (every weight copy touched once), so the measured calls see the steady state. When the call
// count is not given, a calibration pass follows: calls in a row until at least a fifth of a
// repetition (20 ms at least, and a whole cycle) has passed, timed as one block -- per-call timings
// right after start-up run slow (cold caches, a CPU still raising its clock) and under-fill the
// repetitions. The count makes a repetition last about min_time. Both count as warm-up time.
Calibration warm_up(OpCase& c, const MeasureOptions& opt, const ExtraWork* extra, OpCase* side_b) {
  Calibration cal;
  const int cycle = std::max(1, c.rotation());
  const auto start = Clock::now();
  int calls = 0;
  CallMarks* marks = opt.marks;
  if (side_b != nullptr) {  // side B warms first, so side A's calibration follows its own calls
    for (int i = 0; i < std::max(opt.warmup, std::max(1, side_b->rotation())); ++i, ++calls) {
      if (marks != nullptr) marks->begin_call(false);
      side_b->run_once();
      if (marks != nullptr) marks->end_call();
    }
  }
  // Alternating sides calibrate on side A (no work): both sides then run the same calls.
  const bool every_call = extra != nullptr && extra->enabled() && !extra->alternating();
  auto one_call = [&] {
    if (marks != nullptr) marks->begin_call(false);
    c.run_once();
    if (every_call) extra->run();
    if (marks != nullptr) marks->end_call();
  };
  for (int i = 0; i < std::max(opt.warmup, cycle); ++i, ++calls) one_call();
  if (opt.iterations > 0) {
    cal.iterations = opt.iterations;
    cal.source = "given";
  } else {
    const double block_s = std::max(0.02, 0.2 * opt.min_time_s);
    const auto t0 = Clock::now();
    int timed = 0;
    double elapsed = 0;
    do {
      one_call();
      ++timed;
      elapsed = std::chrono::duration<double>(Clock::now() - t0).count();
    } while (elapsed < block_s || timed < cycle);
    calls += timed;
    cal.call_ns_estimate = elapsed * 1e9 / timed;
    cal.iterations =
        std::max<std::int64_t>(1, std::llround(opt.min_time_s * 1e9 / cal.call_ns_estimate));
    cal.source = "calibration pass";
  }
  cal.warmup_calls = calls;
  cal.warmup_s = std::chrono::duration<double>(Clock::now() - start).count();
  return cal;
}

int current_cpu() {
  return sched_getcpu();
}

double thread_cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return double(t.tv_sec) + 1e-9 * double(t.tv_nsec);
}

// One repetition inside Google Benchmark's state: everything here but the state loop is outside
// its timer.
void repetition(benchmark::State& state, Measurement& m, OpCase& c, const MeasureOptions& opt,
                const PerfCounters* counters, const ExtraWork* extra, OpCase* side_b) {
  Repetition rep;
  const int index = static_cast<int>(m.repetitions.size());
  const bool with_extra = extra != nullptr && extra->in_repetition(index);
  if (extra != nullptr) rep.side = extra->side(index);
  OpCase* timed = &c;
  if (side_b != nullptr) {
    rep.side = abba_side(index);
    if (rep.side == 'B') timed = side_b;
    // One untimed call where the other case ran last, so that every timed repetition follows a
    // call of its own side (side A's calibration is the warm-up's last call). Only at a switch:
    // a repetition of one long call (a whole-model decode) otherwise paid twice its time.
    const char last = index == 0 ? 'A' : abba_side(index - 1);
    if (last != rep.side) {
      if (opt.marks != nullptr) opt.marks->begin_call(false);
      timed->run_once();
      if (opt.marks != nullptr) opt.marks->end_call();
    }
  }
  const bool count = counters != nullptr && !counters->available().empty();
  rep.readings_before = environment_readings();
  rep.cpu_before = current_cpu();
  std::vector<double> before;
  if (count) before = counters->read();
  const SchedulingSnapshot scheduling0 = scheduling_snapshot();
  const double cpu0 = thread_cpu_seconds();
  const auto wall0 = Clock::now();
  if (opt.marks != nullptr) {  // instruction counting: each call its own region (call_marks.h)
    for (auto _ : state) {
      opt.marks->begin_call(true);
      timed->run_once();
      if (with_extra) extra->run();
      opt.marks->end_call();
    }
  } else if (with_extra) {
    for (auto _ : state) {
      timed->run_once();
      extra->run();
    }
  } else {
    for (auto _ : state) timed->run_once();
  }
  const double wall = std::chrono::duration<double>(Clock::now() - wall0).count();
  if (opt.busy_wait && wall > 0) rep.cpu_share = (thread_cpu_seconds() - cpu0) / wall;
  rep.taken = scheduling_delta(scheduling0, scheduling_snapshot());
  if (count) {
    const std::vector<double> after = counters->read();
    for (std::size_t i = 0; i < after.size(); ++i) {
      const std::string& name = counters->available()[i];
      const double delta = after[i] - before[i];
      if (name == "cpu_migrations") rep.migrations = delta;
      state.counters[name] = benchmark::Counter(delta, benchmark::Counter::kAvgIterations);
    }
  }
  rep.cpu_after = current_cpu();
  rep.readings_after = environment_readings();
  rep.flags = disturbances(rep.readings_before, rep.readings_after, rep.cpu_before, rep.cpu_after,
                           rep.migrations, opt.pinned, rep.cpu_share);
  m.repetitions.push_back(std::move(rep));
}

}  // namespace

Measurement measure(OpCase& c, const MeasureOptions& opt, const PerfCounters* counters,
                    const ExtraWork* extra, OpCase* side_b) {
  Measurement m;
  m.calibration = warm_up(c, opt, extra, side_b);
  m.repetitions.reserve(static_cast<std::size_t>(opt.repetitions));
  // An exception in a repetition (a call that refuses, an I/O failure) is kept and rethrown once
  // Google Benchmark has returned: it must not unwind through the library's frames (a riscv64
  // build's V-compiled frames cannot be unwound: harness/CMakeLists.txt) and its class must reach
  // main() intact (UnsupportedShape is exit 3 wherever it is thrown).
  std::exception_ptr failure;
  auto* b = benchmark::RegisterBenchmark("case", [&](benchmark::State& state) {
    if (failure) {
      state.SkipWithError("an earlier repetition failed");
      return;
    }
    try {
      repetition(state, m, c, opt, counters, extra, side_b);
    } catch (...) {
      failure = std::current_exception();
      state.SkipWithError("the case threw");
    }
  });
  b->Repetitions(opt.repetitions)
      ->UseRealTime()
      ->Unit(benchmark::kNanosecond)
      ->Iterations(m.calibration.iterations);
  CollectingReporter reporter(m.repetitions);
  const auto t0 = Clock::now();
  benchmark::RunSpecifiedBenchmarks(&reporter);
  m.measured_s = std::chrono::duration<double>(Clock::now() - t0).count();
  benchmark::ClearRegisteredBenchmarks();
  if (failure) std::rethrow_exception(failure);
  if (!reporter.error().empty()) throw std::runtime_error("benchmark error: " + reporter.error());
  if (m.repetitions.size() != static_cast<std::size_t>(opt.repetitions)) {
    throw std::runtime_error("measure: Google Benchmark ran " +
                             std::to_string(m.repetitions.size()) + " repetitions, expected " +
                             std::to_string(opt.repetitions));
  }
  return m;
}

}  // namespace k3runner
