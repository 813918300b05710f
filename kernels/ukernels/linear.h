// Microkernel contracts of the W4B64 Linear drivers (drivers/linear_prefill.cpp,
// drivers/linear_decode.cpp and the TCM pipeline drivers/linear_decode_tcm_pipeline.cpp). A layer
// computes the block-reduced accumulators of one 32-row weight tile; the drivers own the checks,
// the task split over output columns (and row groups), threading and the epilogue. The DRAM and TCM
// decode drivers run the same tile body on the same bytes, so they are bitwise identical by
// construction.
#pragma once

#include <cstdint>
#include <memory>

#include "k3k/quantize.h"
#include "k3k/w4b64.h"
#include "k3k/worker_pool.h"

namespace k3k::ukernel {

// ---- decode ("M1": one activation row)

// acc[i] = sum over blocks b (ascending) of scale[b][i] * D[b][i] + beta[b][i] * sums[b] for the 32
// rows i of one tile: codes [nb][32 j][32 rows], scale and beta [nb][32 rows], x the K int8 codes.
using DecodeRowTileFn = void (*)(const std::uint8_t* codes, const float* scale, const float* beta,
                                 const std::int8_t* x, const std::int32_t* sums, std::int64_t nb,
                                 float acc[kW4RowTile]);

// A layer's tile body bound to one call's activations (the IME2 layer builds its A images once per
// call here). run() computes acc[32] for one tile from weight pointers in DRAM or in TCM; it is
// called concurrently from several workers.
class DecodeTileBody {
 public:
  virtual ~DecodeTileBody() = default;
  virtual void run(const std::uint8_t* codes, const float* scale, const float* beta,
                   float acc[kW4RowTile]) const = 0;
  // After all tiles: throws when the microkernel met data it cannot compute (the IME2 `.hp` body's
  // out-of-range block scales: std::domain_error). Default: nothing to report.
  virtual void finish() const {}
};

struct LinearDecode {
  const char* name;          // e.g. "linear_decode-w4b64-rowtile32-m1n32-rvv"
  bool accepts_ime2_layout;  // reads weights in W4B64Layout::kIme2 (else only kRowTile32)
  // Binds the body to one call (throws std::invalid_argument for weights it cannot read).
  std::unique_ptr<DecodeTileBody> (*bind)(const PackedActivations& a, const W4B64Packed& w);
};

// The body of layers whose tile function reads the activation codes and block sums directly.
template <DecodeRowTileFn Fn>
std::unique_ptr<DecodeTileBody> bind_row_tile(const PackedActivations& a, const W4B64Packed& w) {
  class Body final : public DecodeTileBody {
   public:
    Body(const PackedActivations& a, const W4B64Packed& w)
        : x_(a.codes.data()), sums_(a.block_sum.data()), nb_(w.blocks_per_row()) {}
    void run(const std::uint8_t* codes, const float* scale, const float* beta,
             float acc[kW4RowTile]) const override {
      Fn(codes, scale, beta, x_, sums_, nb_, acc);
    }

   private:
    const std::int8_t* x_;
    const std::int32_t* sums_;
    std::int64_t nb_;
  };
  return std::make_unique<Body>(a, w);
}

// ---- prefill (activations in the M4 pack)

inline constexpr int kMaxGroupRows = 8;  // activation rows per prefill task, at most

// acc[r][i] (r < rows, i < 32) = the block-reduced sum of activation row group * group_rows + r
// against weight row i of one tile (codes, scale, beta as for decode), before the epilogue.
class PrefillTileBody {
 public:
  virtual ~PrefillTileBody() = default;
  virtual void run(std::int64_t group, int rows, const std::uint8_t* codes, const float* scale,
                   const float* beta, float acc[kMaxGroupRows][kW4RowTile]) const = 0;
};

// One M4 group (kPrefillRowsPerTask activation rows) against one 32-row weight tile.
struct PrefillTileArgs {
  const std::int8_t* x;       // the group's codes: block b's 4 rows x 64 at x + b * 256 (M4 pack)
  const std::int32_t* sums;   // block sum of row r, block b at sums[r * nb + b] (r < rows)
  int rows;                   // valid rows of the group (padded rows have zero codes)
  const std::uint8_t* codes;  // the weight tile, as for decode
  const float* scale;
  const float* beta;
  std::int64_t nb;  // K / 64
};

// Tile function of layers whose prefill needs no per-call state: the PrefillTileBody::run contract
// on one M4 group.
using PrefillTileFn = void (*)(const PrefillTileArgs& t, float acc[kMaxGroupRows][kW4RowTile]);

// The body of such layers; instantiate it in the layer's translation unit so that Fn inlines.
template <PrefillTileFn Fn>
std::unique_ptr<PrefillTileBody> bind_prefill_tile(const PackedActivations& a,
                                                   const W4B64Packed& w) {
  class Body final : public PrefillTileBody {
   public:
    Body(const PackedActivations& a, const W4B64Packed& w) : a_(a), nb_(w.blocks_per_row()) {}
    void run(std::int64_t group, int rows, const std::uint8_t* codes, const float* scale,
             const float* beta, float acc[kMaxGroupRows][kW4RowTile]) const override {
      Fn({a_.codes.data() + group * nb_ * kPrefillRowsPerTask * 64,
          a_.block_sum.data() + group * kPrefillRowsPerTask * nb_, rows, codes, scale, beta, nb_},
         acc);
    }

   private:
    const PackedActivations& a_;
    std::int64_t nb_;
  };
  return std::make_unique<Body>(a, w);
}

struct LinearPrefill {
  const char* name;  // e.g. "linear_prefill-w4b64-rowtile32-m4n32-rvv"
  int group_rows;    // activation rows per task: 4 (one M4 group) or 8 (the IME2 tile M)
  bool accepts_ime2_layout;
  // Binds to one call; may prepare per-call operands in parallel on `pool`.
  std::unique_ptr<PrefillTileBody> (*bind)(const PackedActivations& a, const W4B64Packed& w,
                                           WorkerPool& pool);
};

}  // namespace k3k::ukernel
