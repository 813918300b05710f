// k3bench --model: how many tokens a run puts in the KV caches and how long its longest batch is,
// checked before anything is allocated. Tokens beyond the model's context (max_context of its
// file), or caches and buffers beyond the memory available, are bad input (exit 2) naming the
// option that asked for them -- not an allocation failure halfway through, nor a run that
// measures a model at a context it does not have.
#pragma once

#include <cstdint>
#include <string>

#include "harness/common/model/model_config.h"
#include "harness/runner/model_command.h"

namespace k3runner {

struct ModelRunSize {
  std::int64_t batch = 0;     // the longest prefill batch (the activation buffers' rows)
  std::int64_t capacity = 0;  // tokens the KV caches hold: the longest context of any test
  std::string option;         // the options that set the capacity, as given ("--pg 512,128")
};
ModelRunSize model_run_size(const ModelCommandOptions& o);

// Bytes of the forward's caches, states and buffers for this size (Forward's allocations).
std::int64_t forward_bytes(const k3model::ModelConfig& c, std::int64_t kv_element_bytes,
                           const ModelRunSize& size);

// UsageError (exit 2) when the size is beyond the model's context or, with the weights, beyond
// 80% of the memory available (available_bytes <= 0: not known, not checked).
void check_model_run_size(const k3model::ModelConfig& c, const ModelRunSize& size,
                          std::int64_t kv_element_bytes, std::int64_t weight_bytes,
                          long long available_bytes);

}  // namespace k3runner
