// The whole-model cells of `k3tune model`: a prompt-length sweep of prefill runs (op model_pp,
// shape = the model's dimensions + pp) and decode runs (op model_tg: the dimensions + the prompt
// before decoding, pp, + tg decode steps). The model's dimensions travel as shape keys, so the
// runner needs no model file on the board and the cell key changes with any dimension.
#pragma once

#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "harness/common/model/model_config.h"

namespace k3bench {

struct ModelRuns {
  std::vector<int> prompt_lengths;  // one model_pp cell each (llm_bench -p N -n 0)
  std::vector<int> decode_steps;    // one model_tg cell each (llm_bench -p decode_prompt -n N)
  int decode_prompt = 1;            // tokens prefilled (untimed) before the timed decode steps
  bool empty() const { return prompt_lengths.empty() && decode_steps.empty(); }
};

// (op, shape, role) of every cell, e.g. ("model_pp", {..., pp: "512"}, "pp512").
std::vector<std::tuple<std::string, std::map<std::string, std::string>, std::string>>
model_run_shapes(const k3model::ModelConfig& model, const ModelRuns& runs);

}  // namespace k3bench
