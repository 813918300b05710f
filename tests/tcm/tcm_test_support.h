// Data for the TCM tests: random packed weights (any codes and scales exercise the data path; the
// numerics are covered by the Linear tests) and a quantised decode row.
#pragma once

#include <cstdint>
#include <vector>

#include "k3k/quantize.h"
#include "k3k/seeded_random.h"
#include "k3k/w4b64.h"

namespace k3k::tcm_test {

inline W4B64Packed random_weights(std::int64_t n, std::int64_t k, std::uint64_t seed) {
  SeededRandom rng(seed);
  W4B64Storage s;
  s.n = n;
  s.k = k;
  s.codes = AlignedBuffer<std::uint8_t>(static_cast<std::size_t>(n * k / 2));
  s.alpha = AlignedBuffer<float>(static_cast<std::size_t>(n * k / 64 * 2));
  for (auto& c : s.codes) c = static_cast<std::uint8_t>(rng.next() & 0xFF);
  for (auto& a : s.alpha) a = static_cast<float>(rng.normal() * 0.01);
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
