// A run in the formats other tools read (`k3tune db export --format gbench|bmf`):
//
// gbench: Google Benchmark's JSON (its JSONReporter's fields), which its tools/compare.py and
//   anything else that reads that format compares. A "context" block with the machine (host,
//   CPUs, frequency, caches when the runner reported them) and the run's provenance (build hash,
//   variant, target, source revision, compiler); per timed cell one "iteration" entry per counted
//   repetition (every repetition of the run's undisturbed successful processes: real_time and
//   cpu_time are nanoseconds per call, iterations the calls timed) and the aggregates Google
//   Benchmark computes over repetitions, named as it names them (<name>_mean, _median, _stddev,
//   _cv; run_type "aggregate"; cv with aggregate_unit "percentage" as a fraction).
//   Instruction counts are not times: an instruction-count run (`k3tune count`) has no gbench
//   export (refused, naming bmf), and failed cells are listed in the context, not as benchmarks.
// bmf: the Bencher Metric Format: {"<name>": {"<measure>": {"value", "lower_value",
//   "upper_value"}}}. Measures: latency (ns per call: the run's mean with its 95% interval, the
//   figures the reports print), throughput (operations per second, from the kernels' accounting
//   of a call's operations: the same interval mapped through ops / time), tokens_per_s (a
//   whole-model cell of `k3tune model`: its tokens per call over the time, likewise), bytes (bytes
//   a call moves, the kernels' accounting: exact, no interval), instructions (instructions per call
//   of a count run: exact up to the jitter the count verdict allows, no interval).
// Names: the cell's report label as a path, "op/shape[/varying settings][/build label]".
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/host/store/sqlite.h"
#include "harness/host/verdict/run_data.h"

namespace k3reports {

// The run (RunData from k3verdict::load_run) as Google Benchmark JSON; ReportError for a run of
// instruction counts.
nlohmann::json gbench_json(k3store::Connection& db, const k3verdict::RunData& run);
// The run as Bencher Metric Format.
nlohmann::json bmf_json(const k3verdict::RunData& run);
// What the JSON Schema in `schema_file` finds wrong with `doc` (valijson), one line each; empty
// when it conforms. ReportError when the schema file cannot be read.
std::vector<std::string> schema_problems(const nlohmann::json& doc, const std::string& schema_file);
// The export name of a cell ("linear_decode/k=512,n=256", "... /baseline").
std::string export_name(const k3verdict::CellFigures& cell);

}  // namespace k3reports
