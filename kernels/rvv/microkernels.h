// The RVV 1.0 layer (VLEN-agnostic, vsetvl everywhere; compiled with K3_ENABLE_RVV): its
// microkernels, bound into one table for dispatch. Names follow the contracts in kernels/ukernels/.
#pragma once

#include <cstdint>
#include <memory>

#include "cpu/layer_probe.h"
#include "ukernels/layer.h"

namespace k3k::rvv {

#include "ukernels/layer_microkernels.inc"  // NOLINT(bugprone-suspicious-include)

// The Linear epilogue over contiguous outputs (ukernel::StoreTileFn), vectorized; the IME2 layer's
// Linear variants use it too.
void store_linear_tile(const LinearEpilogue& ep, float* out, std::int64_t m, std::int64_t n,
                       std::int64_t row0, int rows, std::int64_t col0, std::int64_t count,
                       const float* sa, const float* acc, std::int64_t acc_stride);

const ukernel::LayerKernels& kernels();
// The CPU probe dispatch consults before handing out these microkernels.
const LayerProbe& probe();

}  // namespace k3k::rvv
