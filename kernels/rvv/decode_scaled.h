// The RVV decode chunk over an fp16 cache on scaled halves (attention_decode_scaled_rvv.cpp):
// bitwise the exact path's results; false when it does not apply (a query of magnitude 2^15 or
// more, an inf or NaN among the chunk's keys and values), for the exact path to compute the chunk.
#pragma once

#include "ukernels/attention.h"

namespace k3k::rvv {

bool attention_decode_chunk_f16_scaled(const ukernel::DecodeChunk& c);

}  // namespace k3k::rvv
