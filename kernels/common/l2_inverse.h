// The scalar step of the L2 normalisation shared by every layer: 1 / sqrt(ss + eps) in float, so
// that only the sum of squares' order differs between layers.
#pragma once

#include <cmath>

namespace k3k::detail {

inline float l2_inverse(float sum_of_squares, float eps) {
  return 1.0f / std::sqrt(sum_of_squares + eps);
}

}  // namespace k3k::detail
