#include "measure.h"

#include <stdexcept>

#include <benchmark/benchmark.h>

namespace k3bench {
namespace {

class CollectingReporter final : public benchmark::BenchmarkReporter {
 public:
  explicit CollectingReporter(std::vector<Repetition>& out) : out_(out) {}
  bool ReportContext(const Context&) override { return true; }
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const auto& run : runs) {
      if (run.run_type != Run::RT_Iteration) continue;  // drop GB's own aggregates
      if (run.error_occurred) throw std::runtime_error("benchmark error: " + run.error_message);
      Repetition rep{run.GetAdjustedRealTime(), run.GetAdjustedCPUTime(), run.iterations, {}};
      for (const auto& [name, counter] : run.counters) rep.counters[name] = counter.value;
      out_.push_back(std::move(rep));
    }
  }

 private:
  std::vector<Repetition>& out_;
};

}  // namespace

std::vector<Repetition> measure(OpCase& c, const MeasureOptions& opt, const PerfCounters* counters,
                                const ExtraWork* extra) {
  const bool with_extra = extra != nullptr && extra->enabled();
  for (int i = 0; i < opt.warmup; ++i) {
    c.run_once();
    if (with_extra) extra->run();
  }
  std::vector<Repetition> reps;
  auto* b = benchmark::RegisterBenchmark("case", [&](benchmark::State& state) {
    // Counters are read outside the timed loop; GB reports them per iteration (kAvgIterations).
    const bool count = counters != nullptr && !counters->available().empty();
    std::vector<double> before;
    if (count) before = counters->read();
    if (with_extra) {
      for (auto _ : state) {
        c.run_once();
        extra->run();
      }
    } else {
      for (auto _ : state) c.run_once();
    }
    if (count) {
      const std::vector<double> after = counters->read();
      for (std::size_t i = 0; i < after.size(); ++i) {
        state.counters[counters->available()[i]] =
            benchmark::Counter(after[i] - before[i], benchmark::Counter::kAvgIterations);
      }
    }
  });
  b->Repetitions(opt.repetitions)->UseRealTime()->Unit(benchmark::kNanosecond);
  if (opt.iterations > 0) b->Iterations(opt.iterations);
  else b->MinTime(opt.min_time_s);
  CollectingReporter reporter(reps);
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::ClearRegisteredBenchmarks();
  return reps;
}

}  // namespace k3bench
