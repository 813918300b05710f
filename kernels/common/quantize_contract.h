// The row scale of the activation quantisation contract (k3k/quantize.h), shared by every layer's
// quantise microkernel so that all produce the same codes.
#pragma once

#include <cmath>

namespace k3k::detail {

// Multiplier applied to a row before quantising: 1, or 2^64 for rows so small (absmax below
// 127/FLT_MAX, ~3.7e-37, subnormals included) that 127/absmax would overflow to infinity.
// Scaling by a power of two is exact, so the codes equal those of the exact quotient either way.
struct RowQuant {
  float prescale;
  float inv_scale;  // 127 / (absmax * prescale), 0 for an all-zero row
};

// Sets sa = absmax/127 and returns how to quantise the row.
inline RowQuant row_scales(float absmax, float& sa) {
  sa = absmax / 127.0f;
  if (!(absmax > 0.0f)) return {1.0f, 0.0f};
  const float inv = 127.0f / absmax;
  if (std::isfinite(inv)) return {1.0f, inv};
  constexpr float kPrescale = 0x1.0p64f;
  return {kPrescale, 127.0f / (absmax * kPrescale)};
}

}  // namespace k3k::detail
