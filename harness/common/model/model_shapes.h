// The op cells of `k3tune bench --model NAME`, derived from the model's dimensions: every kernel
// call of one forward pass (decode: one token; prefill: [bench] prefill_tokens tokens), each
// distinct shape once with the roles that use it (e.g. "q_proj+o_proj"), embedding and lm_head
// included. The shape keys are the runner's (k3bench --list-ops).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "harness/common/model/model_config.h"

namespace k3model {

struct OpShape {
  std::string op;
  std::string role;
  std::map<std::string, std::string> shape;
};

std::vector<OpShape> derive_op_shapes(const ModelConfig& model);

}  // namespace k3model
