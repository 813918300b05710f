// The whole-model cells of `k3tune model`: a prompt-length sweep of prefill runs (op model_pp,
// shape = the model's dimensions + pp [+ depth]), decode runs (op model_tg: the dimensions + the
// prompt before decoding, pp, + tg decode steps) and prefill-then-generate runs (op model_pg:
// pp + tg [+ depth]). The model's dimensions travel as shape keys, so the
// runner needs no model file on the board and the cell key changes with any dimension.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/common/model/model_config.h"

namespace k3bench {

struct ModelRuns {
  std::vector<int> prompt_lengths;  // one model_pp cell each (llm_bench -p N -n 0)
  std::vector<int> decode_steps;    // one model_tg cell each (llm_bench -p decode_prompt -n N)
  int decode_prompt = 1;            // tokens prefilled (untimed) before the timed decode steps
  // Tokens in the caches before every test (llama-bench -d); the decode tests' prompt when > 0.
  int depth = 0;
  // (P, G): one model_pg cell each, a prefill of P and its G decode steps timed together.
  std::vector<std::pair<int, int>> prefill_then_generate;
  bool empty() const {
    return prompt_lengths.empty() && decode_steps.empty() && prefill_then_generate.empty();
  }
};

// The test's name in tables: pp512, tg128, pp512+tg128, with @d4096 at a depth.
std::string model_test_name(const std::string& op, const std::map<std::string, std::string>& shape);

// Tokens of one timed call of a whole-model cell: tg decode steps (model_tg), a pp prefill
// (model_pp), or both (model_pg, as llama-bench's pp+tg); 0 for any other op.
std::int64_t model_tokens_per_call(const std::string& op, const nlohmann::json& shape);

// (op, shape, role) of every cell, e.g. ("model_pp", {..., pp: "512"}, "pp512").
std::vector<std::tuple<std::string, std::map<std::string, std::string>, std::string>>
model_run_shapes(const k3model::ModelConfig& model, const ModelRuns& runs);

}  // namespace k3bench
