// The forward check: a model's kernel forward pass against the float64 reference forward
// (reference_forward.h) on the same weights and tokens -- the prompt's last logits and those of
// every decode step (tokens chosen greedily by the kernel run and fed to both). Two comparisons:
//  * against the reference that quantises activations like the kernels (only float rounding and,
//    rarely, an int8 code on a rounding boundary differ): error <= kQuantizedTolerance;
//  * against the float64 model that keeps activations in float64 (the int8 activation error of
//    the numerics contract included): error <= kUnquantizedTolerance.
// Error of a step = RMS(kernel - reference) / RMS(reference) over its logits; the worst step
// counts. The KV cache is fp32 here (an fp16 cache rounds K and V to 11 bits, which the reference
// would have to mirror).
#pragma once

#include <cstdint>
#include <string>

#include "harness/runner/model/forward.h"
#include "harness/runner/model/model_params.h"

namespace k3runner::model {

// Measured and justified in model_check.cpp. kFloatTolerance: the kernels and the quantising
// reference agree up to float rounding (no int8 code crossed a rounding boundary); the check
// passes within kQuantizedTolerance, which allows such crossings.
inline constexpr double kFloatTolerance = 1e-4;
inline constexpr double kQuantizedTolerance = 0.1;
inline constexpr double kUnquantizedTolerance = 0.35;

struct ForwardCheck {
  int steps = 0;               // logit vectors compared (1 prompt + decode steps)
  double err_quantized = 0;    // worst step's error vs the quantising reference
  double err_unquantized = 0;  // ... vs the float64-activation model
  int argmax_mismatches = 0;   // steps whose greedy token differs from the quantising reference's
  bool float_exact = false;    // err_quantized <= kFloatTolerance
  bool pass = false;
  std::string summary() const;
};

// reference_weights (tests only): give the reference other weights, to show a wrong model is seen.
ForwardCheck check_forward(const k3model::ModelConfig& config, const ModelWeights& weights,
                           k3k::KernelPath path, k3k::WorkerPool& pool, ModelParams params,
                           int prompt_tokens, int decode_steps, std::uint64_t seed,
                           const ModelWeights* reference_weights = nullptr);

// RMS(got - ref) / RMS(ref).
double logit_error(std::span<const float> got, const std::vector<double>& ref);

// Seeded token ids in [0, vocab).
std::vector<std::int32_t> prompt_tokens(std::int64_t count, std::int64_t vocab, std::uint64_t seed);

}  // namespace k3runner::model
