// The body of the decode ("M1") Linear, one 32-row weight tile at a time, for each layer. The DRAM
// kernels and the TCM pipeline (kernels/tcm/) both call it, on weights in DRAM or on a slab copied
// into TCM, so the two paths are bitwise identical by construction. (The IME2 DRAM kernel calls
// the same ime2::detail::tile_outputs its body wraps.)
#pragma once

#include <cstdint>
#include <memory>

#include "k3k/dispatch.h"
#include "k3k/quantize.h"
#include "k3k/w4b64.h"

namespace k3k {

// acc[i] = sum over blocks b (ascending) of scale[b][i] * D[b][i] + beta[b][i] * sums[b] for the 32
// rows i of one tile: codes [nb][32 j][32 rows], scale and beta [nb][32 rows], x the K int8 codes.
using DecodeRowTileFn = void (*)(const std::uint8_t* codes, const float* scale, const float* beta,
                                 const std::int8_t* x, const std::int32_t* sums, std::int64_t nb,
                                 float acc[kW4RowTile]);

// A layer's tile body bound to one call's activations (the IME2 layer builds its A images once per
// call here). run() computes acc[32] for one tile from weight pointers in DRAM or in TCM.
class DecodeTileBody {
 public:
  virtual ~DecodeTileBody() = default;
  virtual void run(const std::uint8_t* codes, const float* scale, const float* beta,
                   float acc[kW4RowTile]) const = 0;
};
// generic, rvv (when built) and ime2 (when built); throws std::invalid_argument for a path not in
// this binary.
std::unique_ptr<DecodeTileBody> make_decode_tile_body(KernelPath path, const PackedActivations& a,
                                                      const W4B64Packed& w);

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
namespace ime2 {
std::unique_ptr<DecodeTileBody> make_decode_tile_body(const PackedActivations& a,
                                                      const W4B64Packed& w);
}

}  // namespace k3k
