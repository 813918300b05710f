// The RVV 1.0 layer (VLEN-agnostic, vsetvl everywhere; compiled with K3_ENABLE_RVV): its
// microkernels, bound into one table for dispatch. Names follow the contracts in kernels/ukernels/.
#pragma once

#include <cstdint>
#include <memory>

#include "cpu/layer_probe.h"
#include "ukernels/layer.h"

namespace k3k::rvv {

#include "ukernels/layer_microkernels.inc"  // NOLINT(bugprone-suspicious-include)

// The Linear epilogue over contiguous outputs (ukernel::BindStoreFn), vectorized and specialised
// per epilogue shape; the IME2 layer's Linear variants use it too.
ukernel::StoreTileFn bind_store_linear_tile(const LinearEpilogue& ep, std::int64_t m);
// One block (64 values) of an embedding row, located by the table's layer; the IME2 layer's lookup
// of kIme2 tables uses it too.
void embedding_block_row(const ukernel::EmbeddingBlock& e, float* dst);

const ukernel::LayerKernels& kernels();
// The CPU probe dispatch consults before handing out these microkernels.
const LayerProbe& probe();

}  // namespace k3k::rvv
