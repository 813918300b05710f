// Data for the TCM tests: random packed weights (any codes and scales exercise the data path; the
// numerics are covered by the Linear tests) and a quantised decode row.
#pragma once

#include <cstdint>
#include <vector>

#include "k3k/quantize.h"
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
  generic::quantize_pack_decode(a.data(), act);
  return act;
}

}  // namespace k3k::tcm_test
