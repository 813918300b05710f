// The RVV layer's W4B64 Linear microkernels (strips of weight rows, rvv/w4b64_strip.h), one bind
// function per variant; layer_rvv.cpp names them and picks the default per VLEN.
#pragma once

#include <memory>

#include "k3k/linear.h"
#include "ukernels/linear.h"

namespace k3k::rvv {

// Decode: one strip of VLMAX(e8, m1) or VLMAX(e8, m2) rows at a time.
ukernel::BodyPtr<ukernel::DecodeTileBody> bind_linear_decode_strips_e8m1(
    const PackedActivations& a, const W4B64Packed& w, const ukernel::LinearOptions& options);
ukernel::BodyPtr<ukernel::DecodeTileBody> bind_linear_decode_strips_e8m2(
    const PackedActivations& a, const W4B64Packed& w, const ukernel::LinearOptions& options);

// Prefill: an M4 group in one pass at LMUL 1, or in two passes of 2 rows at LMUL 2.
ukernel::BodyPtr<ukernel::PrefillTileBody> bind_linear_prefill_strips_m4_e8m1(
    const PackedActivations& a, const W4B64Packed& w, WorkerPool&);
ukernel::BodyPtr<ukernel::PrefillTileBody> bind_linear_prefill_strips_m4_2x2_e8m2(
    const PackedActivations& a, const W4B64Packed& w, WorkerPool&);

}  // namespace k3k::rvv
