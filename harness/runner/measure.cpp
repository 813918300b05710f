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
      out_.push_back({run.GetAdjustedRealTime(), run.GetAdjustedCPUTime(), run.iterations});
    }
  }

 private:
  std::vector<Repetition>& out_;
};

}  // namespace

std::vector<Repetition> measure(OpCase& c, const MeasureOptions& opt) {
  for (int i = 0; i < opt.warmup; ++i) c.run_once();
  std::vector<Repetition> reps;
  auto* b = benchmark::RegisterBenchmark("case", [&c](benchmark::State& state) {
    for (auto _ : state) c.run_once();
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
