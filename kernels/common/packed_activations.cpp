// The activation pack: allocation and block addressing (k3k/quantize.h).
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

}  // namespace k3k
