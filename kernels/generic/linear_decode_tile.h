// The body of the decode ("M1") Linear, one 32-row weight tile at a time, for each layer that has
// one. The DRAM kernels and the TCM pipeline (kernels/tcm/) both call it, on weights in DRAM or on
// a slab copied into TCM, so the two paths are bitwise identical by construction.
#pragma once

#include <cstdint>

#include "k3k/w4b64.h"

namespace k3k {

// acc[i] = sum over blocks b (ascending) of scale[b][i] * D[b][i] + beta[b][i] * sums[b] for the 32
// rows i of one tile: codes [nb][32 j][32 rows], scale and beta [nb][32 rows], x the K int8 codes.
using DecodeRowTileFn = void (*)(const std::uint8_t* codes, const float* scale, const float* beta,
                                 const std::int8_t* x, const std::int32_t* sums, std::int64_t nb,
                                 float acc[kW4RowTile]);

namespace generic {
void decode_row_tile(const std::uint8_t* codes, const float* scale, const float* beta,
                     const std::int8_t* x, const std::int32_t* sums, std::int64_t nb,
                     float acc[kW4RowTile]);
}
namespace rvv {
void decode_row_tile(const std::uint8_t* codes, const float* scale, const float* beta,
                     const std::int8_t* x, const std::int32_t* sums, std::int64_t nb,
                     float acc[kW4RowTile]);
}

}  // namespace k3k
