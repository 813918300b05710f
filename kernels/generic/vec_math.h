// Private helpers shared by the generic kernels: the fixed-order reductions every accuracy bound in
// k3k/reference is derived for, and argument-message formatting. Not part of the public API.
#pragma once

#include <cstddef>
#include <cstdint>
#include <sstream>
#include <stdexcept>
#include <string>

#include "k3k/small_ops.h"

namespace k3k::generic_detail {

inline constexpr int kLanes = kGenericReductionLanes;
static_assert(kLanes == 16, "the tree below and the reference error models assume 16 lanes");

// Dot product in a fixed order that does not depend on the ISA: element i is accumulated into lane
// i % 16 (sequentially within the lane), then the 16 lanes are summed by a pairwise tree
// (16 -> 8 -> 4 -> 2 -> 1). Each product therefore goes through at most ceil(n/16) + 4 roundings
// (its own, ceil(n/16) - 1 lane additions, 4 tree levels): the `dot_depth` of the error models.
// The fixed-width inner loop is what compilers turn into vector FMAs/MULs+ADDs without needing
// -ffast-math (a plain scalar reduction would not vectorise without reassociation).
inline float dot_lanes(const float* __restrict a, const float* __restrict b, int n) {
  float acc[kLanes] = {};
  int i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int l = 0; l < kLanes; ++l) acc[l] += a[i + l] * b[i + l];
  }
  for (int l = 0; i + l < n; ++l) acc[l] += a[i + l] * b[i + l];
  for (int l = 0; l < 8; ++l) acc[l] += acc[l + 8];
  for (int l = 0; l < 4; ++l) acc[l] += acc[l + 4];
  for (int l = 0; l < 2; ++l) acc[l] += acc[l + 2];
  return acc[0] + acc[1];
}

// Floats per worker-scratch region rounded up to a whole number of 64-byte lines, so that the
// regions of different workers never share a cache line.
inline std::int64_t scratch_stride(std::int64_t floats) {
  return (floats + 15) / 16 * 16;
}

// True when out and in share memory without being the same span (in-place use passes the same
// span).
inline bool partially_overlap(const float* in, std::size_t in_size, const float* out,
                              std::size_t out_size) {
  if (in == out) return false;
  return in < out + out_size && out < in + in_size;
}

template <typename... Args>
std::string message(const Args&... args) {
  std::ostringstream os;
  (os << ... << args);
  return os.str();
}

template <typename... Args>
[[noreturn]] void fail(const Args&... args) {
  throw std::invalid_argument(message(args...));
}

}  // namespace k3k::generic_detail
