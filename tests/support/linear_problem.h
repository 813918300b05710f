// One Linear problem on seeded data: HQQ weights (storage and kRowTile32), activations quantised by
// a layer (decode layout at M = 1, prefill otherwise), a bias; and its run on any layer, weights
// and tiling into a filled output (so an unwritten element cannot pass a comparison of bytes).
#pragma once

#include <cstdint>
#include <vector>

#include "k3k/dispatch.h"
#include "k3k/linear.h"
#include "k3k/quantize.h"
#include "k3k/w4b64.h"
#include "k3k/worker_pool.h"
#include "support/test_data.h"

namespace k3test {

struct LinearProblem {
  std::int64_t m, n, k;
  k3k::W4B64Storage storage;
  k3k::W4B64Packed rowtile32;
  k3k::PackedActivations act;
  std::vector<float> bias;
  k3k::LinearEpilogue ep;
};

inline LinearProblem make_linear_problem(k3k::KernelPath path, std::int64_t m, std::int64_t n,
                                         std::int64_t k, std::uint64_t seed) {
  LinearProblem p{m,
                  n,
                  k,
                  hqq_weights(n, k, seed),
                  {},
                  {},
                  random_floats(static_cast<std::size_t>(n), seed + 1),
                  {}};
  p.rowtile32 = k3k::pack_w4b64_generic(p.storage);
  const bool decode = m == 1;
  p.act = k3k::make_packed_activations(
      m, k, decode ? k3k::ActivationLayout::kRowK256 : k3k::ActivationLayout::kRowsM4);
  const std::vector<float> a = random_floats(static_cast<std::size_t>(m * k), seed + 2);
  k3k::WorkerPool pool(1);
  if (decode)
    k3k::quantize_pack_decode(path, a.data(), p.act);
  else
    k3k::quantize_pack_prefill(path, a.data(), p.act, pool);
  p.ep.bias = p.bias.data();
  return p;
}

inline std::vector<float> run_linear(const LinearProblem& p, k3k::KernelPath path,
                                     const k3k::W4B64Packed& w, const k3k::LinearTiling& tiling,
                                     k3k::WorkerPool& pool) {
  std::vector<float> out(static_cast<std::size_t>(p.m * p.n), -7.0f);
  if (p.m == 1)
    k3k::linear_decode_w4b64(path, p.act, w, p.ep, out.data(), pool, tiling);
  else
    k3k::linear_prefill_w4b64(path, p.act, w, p.ep, out.data(), pool, tiling);
  return out;
}

}  // namespace k3test
