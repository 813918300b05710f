#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "k3k/quantize.h"

namespace k3k {

const std::int8_t* PackedActivations::block_codes(std::int64_t row, std::int64_t block) const {
  const std::int64_t nb = blocks_per_row();
  if (layout == ActivationLayout::kRowK256) return codes.data() + block * 64;
  const std::int64_t group = row / kPrefillRowsPerTask;
  const std::int64_t lane = row % kPrefillRowsPerTask;
  return codes.data() + ((group * nb + block) * kPrefillRowsPerTask + lane) * 64;
}

PackedActivations make_packed_activations(std::int64_t m, std::int64_t k, ActivationLayout layout) {
  if (m <= 0) throw std::invalid_argument("activations: M must be positive, got " + std::to_string(m));
  if (k <= 0 || k % 64 != 0) {
    throw std::invalid_argument("activations: K must be a positive multiple of 64, got " +
                                std::to_string(k));
  }
  if (layout == ActivationLayout::kRowK256 && m != 1) {
    throw std::invalid_argument("activations: the decode (K256) pack holds exactly one row, got M=" +
                                std::to_string(m));
  }
  PackedActivations p;
  p.m = m;
  p.k = k;
  p.layout = layout;
  const std::int64_t padded_rows =
      layout == ActivationLayout::kRowsM4
          ? (m + kPrefillRowsPerTask - 1) / kPrefillRowsPerTask * kPrefillRowsPerTask
          : 1;
  p.codes = AlignedBuffer<std::int8_t>(static_cast<std::size_t>(padded_rows * k));
  p.scale = AlignedBuffer<float>(static_cast<std::size_t>(m));
  p.block_sum = AlignedBuffer<std::int32_t>(static_cast<std::size_t>(m * (k / 64)));
  return p;
}

namespace generic {
namespace {

// Multiplier applied to a row before quantising: 1, or 2^64 for rows so small (absmax below
// 127/FLT_MAX, ~3.7e-37, subnormals included) that 127/absmax would overflow to infinity.
// Scaling by a power of two is exact, so the codes equal those of the exact quotient either way.
struct RowQuant {
  float prescale;
  float inv_scale;  // 127 / (absmax * prescale), 0 for an all-zero row
};

// Quantises one 64-element block: codes written to dst, returns their sum.
inline std::int32_t quantize_block(const float* src, RowQuant rq, std::int8_t* dst) {
  std::int32_t sum = 0;
  for (int j = 0; j < 64; ++j) {
    // nearbyint rounds half to even under the default rounding mode, like RVV's vfcvt.x.f.
    const float q = std::clamp(std::nearbyint((src[j] * rq.prescale) * rq.inv_scale), -127.0f, 127.0f);
    dst[j] = static_cast<std::int8_t>(q);
    sum += static_cast<std::int32_t>(q);
  }
  return sum;
}

inline float row_absmax(const float* a, std::int64_t k) {
  float m = 0.0f;
  for (std::int64_t i = 0; i < k; ++i) m = std::max(m, std::fabs(a[i]));
  return m;
}

// Sets sa = absmax/127 and returns how to quantise the row.
inline RowQuant row_scales(float absmax, float& sa) {
  sa = absmax / 127.0f;
  if (!(absmax > 0.0f)) return {1.0f, 0.0f};
  const float inv = 127.0f / absmax;
  if (std::isfinite(inv)) return {1.0f, inv};
  constexpr float kPrescale = 0x1.0p64f;
  return {kPrescale, 127.0f / (absmax * kPrescale)};
}

void check_pack(const PackedActivations& out, ActivationLayout want, const char* who) {
  if (out.layout != want || out.codes.empty()) {
    throw std::invalid_argument(std::string(who) + ": output pack has the wrong layout or is empty");
  }
}

}  // namespace

void quantize_pack_prefill(const float* a, PackedActivations& out, WorkerPool& pool) {
  check_pack(out, ActivationLayout::kRowsM4, "quantize_pack_prefill");
  const std::int64_t k = out.k;
  const std::int64_t nb = out.blocks_per_row();
  // One task per row: the row is read from memory once (absmax) and re-read from L1/L2 to pack.
  pool.parallel_for(out.m, [&](std::int64_t row, int) {
    const float* src = a + row * k;
    const RowQuant inv = row_scales(row_absmax(src, k), out.scale[static_cast<std::size_t>(row)]);
    for (std::int64_t b = 0; b < nb; ++b) {
      auto* dst = const_cast<std::int8_t*>(out.block_codes(row, b));
      out.block_sum[static_cast<std::size_t>(row * nb + b)] = quantize_block(src + b * 64, inv, dst);
    }
  });
}

void quantize_pack_decode(const float* a, PackedActivations& out) {
  check_pack(out, ActivationLayout::kRowK256, "quantize_pack_decode");
  const std::int64_t k = out.k;
  const RowQuant inv = row_scales(row_absmax(a, k), out.scale[0]);
  // Super-block by super-block, in kernel consumption order.
  for (std::int64_t k0 = 0; k0 < k; k0 += kDecodeSuperBlockK) {
    const std::int64_t k1 = std::min<std::int64_t>(k, k0 + kDecodeSuperBlockK);
    for (std::int64_t kb = k0; kb < k1; kb += 64) {
      out.block_sum[static_cast<std::size_t>(kb / 64)] =
          quantize_block(a + kb, inv, out.codes.data() + kb);
    }
  }
}

}  // namespace generic
}  // namespace k3k
