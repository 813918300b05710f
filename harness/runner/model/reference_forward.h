// The whole-model forward pass in float64, written straight from the model's definition (HF
// Qwen3 / Qwen3.5 modelling code): the oracle of the forward checks. It reads the same quantised
// weights (dequantised exactly) and, optionally, quantises each Linear's input rows to int8 the way
// the numerics contract does (absmax / 127, round half to even) -- in double, so only the rare
// code that sits on a rounding boundary can differ from the kernels'. Meant for small models
// (dense double matrices).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "harness/common/model/model_config.h"
#include "harness/runner/model/model_weights.h"

namespace k3runner::model {

struct ReferenceOptions {
  bool quantize_activations = true;  // false: the float64 model with only the weights quantised
};

// Logits of the last prompt token, then of each decode token (fed in order after the prompt).
// The weights may be packed for any layer compiled in (read through k3k::rowtile32_of).
std::vector<std::vector<double>> reference_logits(const k3model::ModelConfig& config,
                                                  const ModelWeights& weights,
                                                  std::span<const std::int32_t> prompt,
                                                  std::span<const std::int32_t> decode_tokens,
                                                  const ReferenceOptions& options);

// Float64 dequantisation of a packed matrix (any layout a compiled layer packs): [n][k] row-major.
std::vector<double> dequantize(const k3k::W4B64Packed& w);

}  // namespace k3runner::model
