// The generic layer's fixed-order reduction, the one every generic accuracy bound in k3k/reference
// is derived for.
#pragma once

#include "k3k/small_ops.h"

namespace k3k::generic {

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

}  // namespace k3k::generic
