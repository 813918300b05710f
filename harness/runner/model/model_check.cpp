// Tolerances, measured and justified. Against the quantising reference the kernels differ by
// float32 rounding (a few u = 6e-8 per op, through the layers: measured 1e-7 to 3e-6 of the
// logits' RMS; kFloatTolerance = 1e-4 is 30x that) -- and by int8 activation codes that sit on a
// rounding boundary: the kernel's float input and the reference's double input differ by ~1e-6
// relative, so a value within that of a half-step rounds the other way in one of them (seen: ~1
// in 10^4 codes, within 3e-6 of a tie). One such code moves a Linear's output by 1/127 of its
// row's absmax times one weight column; in the tiny models (hidden 128, 12x outlier weights) that
// is visible at the logits: over 40 weight seeds x 2 chunk sizes the worst RMS error was 0.040
// (tiny-qwen3.5) and 0.015 (tiny-qwen3). kQuantizedTolerance = 0.1 (2.5x the worst seen) is what
// the check must pass, and it sees gross faults only: on the tiny hybrid model with a 12-token
// prompt, wrong Gated DeltaNet decays give 0.13, but RoPE over the whole head instead of the
// partial rotation 0.09 and a wrong RoPE base 0.03 (short contexts barely rotate). Those are
// caught by the float-exact comparison, which holds on every run without a boundary crossing
// (the tests pin such runs: test_model_forward.cpp AWrongModelIsCaught), and which the summary
// reports. Against the float64-activation model the int8 activations themselves cost 0.043 to
// 0.171 (tiny-qwen3.5) and 0.015 to 0.030 (tiny-qwen3) of the RMS over the same runs; tolerance
// 0.35 (2x the worst seen): a coarse second check.
#include "harness/runner/model/model_check.h"

#include <cmath>

#include <fmt/format.h>

#include "k3k/seeded_random.h"
#include "harness/runner/model/reference_forward.h"

namespace k3runner::model {
namespace {

std::size_t argmax(const std::vector<double>& v) {
  return static_cast<std::size_t>(std::max_element(v.begin(), v.end()) - v.begin());
}

}  // namespace

double logit_error(std::span<const float> got, const std::vector<double>& ref) {
  double ss = 0.0, se = 0.0;
  for (std::size_t i = 0; i < ref.size(); ++i) {
    ss += ref[i] * ref[i];
    se += (got[i] - ref[i]) * (got[i] - ref[i]);
  }
  return ss > 0 ? std::sqrt(se / ss) : std::sqrt(se);
}

std::vector<std::int32_t> prompt_tokens(std::int64_t count, std::int64_t vocab,
                                        std::uint64_t seed) {
  k3k::SeededRandom rng(seed);
  std::vector<std::int32_t> t(static_cast<std::size_t>(count));
  for (auto& x : t) x = static_cast<std::int32_t>(rng.next() % static_cast<std::uint64_t>(vocab));
  return t;
}

std::string ForwardCheck::summary() const {
  return fmt::format(
      "{}: {} logit vectors; RMS(error) / RMS(logits) {:.3g} vs the quantising float64 forward "
      "(tolerance {:g}; {}), {:.3g} vs the float64-activation forward (tolerance {:g}); greedy "
      "token differs in {} of {} steps",
      pass ? "pass" : "FAIL", steps, err_quantized, kQuantizedTolerance,
      float_exact ? "float-exact: within " + fmt::format("{:g}", kFloatTolerance)
                  : "an int8 code crossed a rounding boundary",
      err_unquantized, kUnquantizedTolerance, argmax_mismatches, steps);
}

ForwardCheck check_forward(const k3model::ModelConfig& config, const ModelWeights& weights,
                           k3k::KernelPath path, k3k::WorkerPool& pool, ModelParams params,
                           int prompt, int decode_steps, std::uint64_t seed,
                           const ModelWeights* reference_weights) {
  params.kv_dtype = k3k::KvDtype::f32;
  Forward fwd(config, weights, params, path, pool, prompt, prompt + decode_steps);
  const auto tokens = prompt_tokens(prompt, config.vocab, seed);
  std::vector<std::vector<float>> got;
  std::vector<std::int32_t> fed;
  const auto first = fwd.prefill(tokens);
  got.emplace_back(first.begin(), first.end());
  for (int s = 0; s < decode_steps; ++s) {
    fed.push_back(fwd.argmax());
    const auto l = fwd.decode(fed.back());
    got.emplace_back(l.begin(), l.end());
  }
  const ModelWeights& rw = reference_weights != nullptr ? *reference_weights : weights;
  const auto ref_q = reference_logits(config, rw, tokens, fed, {true});
  const auto ref_f = reference_logits(config, rw, tokens, fed, {false});
  ForwardCheck c;
  c.steps = static_cast<int>(got.size());
  for (std::size_t s = 0; s < got.size(); ++s) {
    c.err_quantized = std::max(c.err_quantized, logit_error(got[s], ref_q[s]));
    c.err_unquantized = std::max(c.err_unquantized, logit_error(got[s], ref_f[s]));
    const std::vector<double> g(got[s].begin(), got[s].end());
    c.argmax_mismatches += argmax(g) != argmax(ref_q[s]);
  }
  c.float_exact = c.err_quantized <= kFloatTolerance;
  c.pass = c.err_quantized <= kQuantizedTolerance && c.err_unquantized <= kUnquantizedTolerance;
  return c;
}

}  // namespace k3runner::model
