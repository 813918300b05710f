// Floating-point error-analysis helpers used by every accuracy bound (Higham, "Accuracy and
// Stability of Numerical Algorithms", ch. 3): u is the unit roundoff of binary32 (2^-24) and
// gamma(n) = n*u / (1 - n*u) bounds the relative error accumulated by n successive roundings.
#pragma once

#include <limits>

namespace k3k {

inline constexpr double kUnitRoundoffF32 = 0x1.0p-24;
inline constexpr double kUnitRoundoffF16 = 0x1.0p-11;

inline double gamma_f32(double n) {
  const double nu = n * kUnitRoundoffF32;
  return nu < 1.0 ? nu / (1.0 - nu) : std::numeric_limits<double>::infinity();
}

}  // namespace k3k
