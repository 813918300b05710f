// The modelled K3 tokens/s of `k3tune count --model`: instruction counts per token turned into the
// lower of a compute bound and a bandwidth bound, with the board facts of configs/boards/k3.toml's
// [throughput_model] table (each with its source, or said to be an assumption). A model, printed
// as one and never mixed with measured or published figures.
#pragma once

#include <string>
#include <vector>

namespace k3bench {

struct ThroughputFacts {
  std::string file;
  double clock_ghz = 0, cores = 0, parallel_efficiency = 0;
  double scalar_ipc = 0, vector_cpi = 0, ime2_cpi = 0, bandwidth_gbs = 0;
  // (name, value as written, source) of every fact, for printing beside the figure.
  struct Fact {
    std::string name, value, source;
  };
  std::vector<Fact> facts;
};

// UserError "file:line: throughput_model.key: what" on a missing or malformed fact.
ThroughputFacts load_throughput_facts(const std::string& board_file);

// What one token costs, counted (instructions) and moved (bytes).
struct TokenCost {
  double scalar = 0, vector = 0, ime2 = 0;  // instructions per token (scalar: other - vector)
  double bytes = 0;                         // memory traffic per token
};

struct ThroughputEstimate {
  double cycles_per_token = 0;
  double compute_tokens_per_s = 0, bandwidth_tokens_per_s = 0;
  double tokens_per_s = 0;  // the lower bound
  std::string bound;        // "compute" or "bandwidth"
};

ThroughputEstimate estimate_throughput(const ThroughputFacts& f, const TokenCost& cost);

}  // namespace k3bench
