// Data for the TCM tests: random packed weights (any codes and scales exercise the data path; the
// numerics are covered by the Linear tests) and a quantised decode row.
#pragma once

#include <cstdint>
#include <vector>

#include "k3k/linear.h"
#include "k3k/quantize.h"
#include "k3k/tcm_linear.h"
#include "k3k/seeded_random.h"
#include "k3k/w4b64.h"
#include "support/test_data.h"

namespace k3k::tcm_test {

inline W4B64Packed random_weights(std::int64_t n, std::int64_t k, std::uint64_t seed) {
  SeededRandom rng(seed);
  const W4B64Storage s =
      k3test::random_code_storage(n, k, rng, [&rng](std::size_t) { return static_cast<float>(rng.normal() * 0.01); });
  return pack_w4b64_generic(s);
}

inline PackedActivations decode_row(std::int64_t k, std::uint64_t seed) {
  SeededRandom rng(seed);
  std::vector<float> a(static_cast<std::size_t>(k));
  for (auto& x : a) x = static_cast<float>(rng.normal());
  PackedActivations act = make_packed_activations(1, k, ActivationLayout::kRowK256);
  k3k::quantize_pack_decode(k3k::KernelPath::kGeneric, a.data(), act);
  return act;
}

// The gate's decision and the pipeline's statistics of one decode call.
struct TcmDecodeResult {
  TcmGateDecision gate;
  TcmPipelineStats stats;
};

// Decode Linear with the TCM gate decided for this call (as an engine does once per shape).
inline TcmDecodeResult decode_with_tcm(KernelPath path, const PackedActivations& a, const W4B64Packed& w,
                                       const LinearEpilogue& ep, float* out, WorkerPool& pool,
                                       TcmWorkspace* workspace, const TcmDecodeParams& params,
                                       const LinearTiling& tiling = {}) {
  TcmDecodeResult r;
  r.gate = decide_tcm_decode(path, w, workspace, params, pool.size());
  LinearDecodeOptions options;
  options.tcm_workspace = workspace;
  options.tcm_params = &params;
  options.tcm_gate = &r.gate;
  options.tcm_stats = &r.stats;
  linear_decode_w4b64(path, a, w, ep, out, pool, tiling, options);
  return r;
}

}  // namespace k3k::tcm_test
