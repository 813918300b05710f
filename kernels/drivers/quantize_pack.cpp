// Quantise + pack: one task per row for the prefill pack (the row is read from memory once for
// its absmax and re-read from L1/L2 to pack); the decode row in kernel consumption order.
#include <stdexcept>
#include <string>

#include "drivers/drivers.h"

namespace k3k::driver {

namespace {
void check_pack(const PackedActivations& out, ActivationLayout want, const char* who) {
  if (out.layout != want || out.codes.empty()) {
    throw std::invalid_argument(std::string(who) +
                                ": output pack has the wrong layout or is empty");
  }
}
}  // namespace

void quantize_pack_prefill(const ukernel::Quantize& uk, const float* a, PackedActivations& out,
                           WorkerPool& pool) {
  check_pack(out, ActivationLayout::kRowsM4, "quantize_pack_prefill");
  const std::int64_t k = out.k, nb = out.blocks_per_row();
  // The M4 pack keeps the four rows of a group's block contiguous: a row's blocks are 4 * 64 apart.
  pool.parallel_for(out.m, [&](std::int64_t row, int) {
    uk.row(a + row * k, k, const_cast<std::int8_t*>(out.block_codes(row, 0)),
           kPrefillRowsPerTask * 64, out.block_sum.data() + row * nb, out.scale.data() + row);
  });
}

void quantize_pack_decode(const ukernel::Quantize& uk, const float* a, PackedActivations& out) {
  check_pack(out, ActivationLayout::kRowK256, "quantize_pack_decode");
  // One row: the K256 super-blocks are consecutive 64-blocks in K order.
  uk.row(a, out.k, out.codes.data(), 64, out.block_sum.data(), out.scale.data());
}

}  // namespace k3k::driver
