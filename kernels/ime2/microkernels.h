// The IME2 layer (SpacemiT K3 A100, VLEN 1024 + IME2): the W4B64 Linear microkernels; every other
// op of the layer is the RVV microkernel (as on the K3, where attention and small ops run on RVV).
// Compiled only with K3_ENABLE_IME2.
#pragma once

#include <memory>

#include "cpu/layer_probe.h"
#include "ukernels/layer.h"

namespace k3k::ime2 {

// Prefill: 8 activation rows (two M4 groups, the IME2 tile M) per task, A images built once per
// call in parallel. Weights in either layout (kRowTile32 is permuted into IME2 order per unit).
ukernel::BodyPtr<ukernel::PrefillTileBody> bind_linear_prefill_m8(const PackedActivations& a,
                                                                  const W4B64Packed& w,
                                                                  WorkerPool& pool);
// Decode: the activation row as row 0 of an 8-row A tile, its image built once per call.
ukernel::BodyPtr<ukernel::DecodeTileBody> bind_linear_decode_m1(const PackedActivations& a,
                                                                const W4B64Packed& w,
                                                                const ukernel::LinearOptions&);
// Decode with `.hp` fp16 block-scale accumulation (kIme2 weights only; README §3.1).
ukernel::BodyPtr<ukernel::DecodeTileBody> bind_linear_decode_m1_fp16_block_scale(
    const PackedActivations& a, const W4B64Packed& w, const ukernel::LinearOptions&);

// Embedding lookup of kIme2 tables (a tied embedding packed for the IME2 lm_head), and of the
// RVV layer's layouts through its row function.
bool embedding_reads(const W4B64Packed& w);
void embedding_row(const W4B64Packed& table, std::int64_t row, float* dst);

const ukernel::LayerKernels& kernels();
// The CPU probe dispatch consults before handing out these microkernels.
const LayerProbe& probe();

}  // namespace k3k::ime2
