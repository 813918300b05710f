// The generic (portable C++) layer: its microkernels, bound into one table for dispatch. Names
// follow the contracts in kernels/ukernels/.
#pragma once

#include <cstdint>
#include <memory>

#include "cpu/layer_probe.h"
#include "ukernels/layer.h"

namespace k3k::generic {

#include "ukernels/layer_microkernels.inc"  // NOLINT(bugprone-suspicious-include)

// Linear over kRowTile32 weights: the decode tile (one row, 32 weight rows) and the M4 prefill.
void linear_decode_row_tile(const std::uint8_t* codes, const fp16_t* pairs, const std::int8_t* x,
                            const std::int32_t* sums, std::int64_t nb, float* acc);
ukernel::BodyPtr<ukernel::PrefillTileBody> bind_linear_prefill_m4(const PackedActivations& a,
                                                                  const W4B64Packed& w,
                                                                  WorkerPool&);

const ukernel::LayerKernels& kernels();

}  // namespace k3k::generic
