// Helpers shared by the test suites: seeded data and exception-message capture.
#pragma once

#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "k3k/seeded_random.h"
#include "k3k/w4b64.h"

namespace k3test {

// normal(mean, stddev) floats, reproducible for a seed on every target.
inline std::vector<float> random_floats(std::size_t n, std::uint64_t seed, double mean, double stddev) {
  k3k::SeededRandom rng(seed);
  std::vector<float> v(n);
  for (auto& x : v) x = static_cast<float>(rng.normal(mean, stddev));
  return v;
}
inline std::vector<float> random_floats(std::size_t n, std::uint64_t seed, double stddev = 1.0) {
  return random_floats(n, seed, 0.0, stddev);
}

// An m x k activation matrix of normal(0, 1) floats (row-major), reproducible for a seed.
inline std::vector<float> normal_activations(std::int64_t m, std::int64_t k, std::uint64_t seed) {
  return random_floats(static_cast<std::size_t>(m * k), seed);
}

// W4B64 storage as a model loads it: realistic synthetic weights (k3k::make_synthetic_weights),
// HQQ-quantised with 4 iterations.
inline k3k::W4B64Storage hqq_weights(std::int64_t n, std::int64_t k, std::uint64_t seed) {
  const auto w = k3k::make_synthetic_weights(n, k, {.seed = seed});
  return k3k::quantize_w4b64_hqq(w.span(), n, k, 4);
}

// Same size and the same bits (NaN payloads and signed zeros included).
inline bool bitwise_equal(const std::vector<float>& a, const std::vector<float>& b) {
  // Empty vectors may hold null data pointers, which memcmp must not see (UBSan says so).
  return a.size() == b.size() &&
         (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
}

// W4B64 storage (MNN form) with uniformly random code bytes; alpha(index) gives each float of the
// (beta, scale) pairs in storage order, index even = beta, odd = scale.
template <typename AlphaFn>
k3k::W4B64Storage random_code_storage(std::int64_t n, std::int64_t k, k3k::SeededRandom& rng, AlphaFn alpha) {
  k3k::W4B64Storage s;
  s.n = n;
  s.k = k;
  s.codes = k3k::AlignedBuffer<std::uint8_t>(static_cast<std::size_t>(n * k / 2));
  s.alpha = k3k::AlignedBuffer<float>(static_cast<std::size_t>(n * k / 64 * 2));
  for (auto& c : s.codes) c = static_cast<std::uint8_t>(rng.next() & 0xFF);
  for (std::size_t i = 0; i < s.alpha.size(); ++i) s.alpha[i] = alpha(i);
  return s;
}

// The message of the std::invalid_argument fn throws, or a marker when it throws none.
template <typename Fn>
std::string thrown_message(Fn&& fn) {
  try {
    fn();
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "<no std::invalid_argument thrown>";
}

}  // namespace k3test
