// Printing of `k3tune bench --farm` (table per cell with its board, moves, quarantines, samples
// before and after) and its JSON form.
#pragma once

#include <nlohmann/json.hpp>

#include "harness/host/farmbench/farm_sweep.h"

namespace k3cli {

nlohmann::json farm_bench_json(const k3farmbench::FarmBenchOutcome& o, const std::string& db_path);
void print_farm_bench(const k3farmbench::FarmBenchOutcome& o, const std::string& db_path);

}  // namespace k3cli
