// The scalar step of RMSNorm shared by every layer: 1 / sqrt(ss / dim + eps) in float, so that only
// the sum of squares' order differs between layers.
#pragma once

#include <cmath>

namespace k3k::detail {

inline float rms_inverse(float sum_of_squares, int dim, float eps) {
  const float fdim = static_cast<float>(dim);  // exact for dim < 2^24
  return 1.0f / std::sqrt(sum_of_squares / fdim + eps);
}

}  // namespace k3k::detail
