// `k3tune count --model M`: counts a whole prefill and a decode step at depth per runner and VLEN
// (k3::bench model_count.h), stores them like the op counts, and prints the per-op breakdown, the
// modelled K3 tokens/s with every assumption (throughput_model.h) and, in their own table, the
// published K3 figures of other engines for the model.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "apps/cli/app_context.h"
#include "harness/host/bench/instruction_count.h"

namespace k3cli {

struct ModelCountOptions {
  std::string model;  // id in configs/models or a .toml path
  int prefill_tokens = 128;
  int depth = 512;
  bool store = true;
  int jobs = 0;
};

// runners: (path, riscv64 k3bench) pairs.
void run_model_count(const AppContext& ctx, const ModelCountOptions& o,
                     const std::vector<std::pair<std::string, std::string>>& runners,
                     const std::vector<int>& vlens, const k3bench::CountTools& tools);

}  // namespace k3cli
