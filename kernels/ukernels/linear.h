// Microkernel contracts of the W4B64 Linear drivers (drivers/linear_prefill.cpp,
// drivers/linear_decode.cpp and the TCM pipeline drivers/linear_decode_tcm_pipeline.cpp). A layer
// computes the block-reduced accumulators of one weight tile (w.row_tile rows: 32, or R for the
// RVV layer's kSignedRows layout); the drivers own the checks, the task split over output columns
// (and row groups), threading and the epilogue. The DRAM and TCM decode drivers run the same tile
// body on the same bytes, so they are bitwise identical by construction.
//
// A layer may offer several variants of a Linear microkernel (e.g. the RVV strip width and LMUL),
// each with its contract name; dispatch takes the one named by LinearTiling::ukernel or, when none
// is named, the layer's default for the weights' layout and this CPU (LinearVariants::pick).
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <span>
#include <string_view>

#include "k3k/linear.h"
#include "k3k/quantize.h"
#include "k3k/w4b64.h"
#include "k3k/worker_pool.h"
#include "ukernels/body_slot.h"

namespace k3k::ukernel {

// ---- decode ("M1": one activation row)

// acc[i] = sum over blocks b (ascending) of scale[b][i] * D[b][i] + beta[b][i] * sums[b] for the 32
// rows i of one tile: codes [nb][32 j][32 rows], pairs [nb][32 rows][2] (beta, scale; w4b64.h), x
// the K int8 codes.
using DecodeRowTileFn = void (*)(const std::uint8_t* codes, const fp16_t* pairs,
                                 const std::int8_t* x, const std::int32_t* sums, std::int64_t nb,
                                 float* acc);

// The direct epilogue over the outputs (row0 + r, col0 + i), r < rows, i < count, from
// acc[r * acc_stride + i] with row scale sa[r]: per output the operations of
// detail::store_linear_output in the same order, so every layer's epilogue gives the same bits.
// Null in a variant (bind_store): the drivers' scalar loop (detail::store_linear_tile); the RVV
// layer's is vectorized (per output, the scalar epilogue cost a third of an IME2 decode's and as
// much as an IME2 prefill's matrix work).
using StoreTileFn = void (*)(const LinearEpilogue& ep, float* out, std::int64_t m, std::int64_t n,
                             std::int64_t row0, int rows, std::int64_t col0, std::int64_t count,
                             const float* sa, const float* acc, std::int64_t acc_stride);
// A variant's epilogue bound to one call's (ep, M) by the driver, once: the function it returns
// is specialised for that epilogue's shape (bias, residual, clamp, layout), so a task's store
// sets up nothing it does not use (it runs once per prefill group and column span).
using BindStoreFn = StoreTileFn (*)(const LinearEpilogue& ep, std::int64_t m);

// Per-call options a Linear microkernel receives when it is bound.
struct LinearOptions {
  // Software prefetch distance in bytes ahead of the weight stream (0: off). Only microkernels
  // built with Zicbop use it (K3_ENABLE_ZICBOP); it never changes a result.
  int prefetch_bytes = 0;
};

// A layer's tile body bound to one call's activations (the IME2 layer builds its A images once per
// call here). run() computes acc[0..w.row_tile) for one tile from weight pointers in DRAM or in
// TCM; it is called concurrently from several workers.
// Where tile i of consecutive weight tiles starts, relative to the first (the same in DRAM and in
// a TCM slab): codes + i * code_bytes, pairs + 2 * i * pairs; its rows go to acc + i * rows.
struct TileStrides {
  std::int64_t code_bytes, pairs, rows;
  static TileStrides of(const W4B64Packed& w) {
    return {w.tile_code_bytes(), w.tile_pairs(), w.row_tile};
  }
};

class DecodeTileBody {
 public:
  virtual ~DecodeTileBody() = default;
  virtual void run(const std::uint8_t* codes, const fp16_t* pairs, float* acc) const = 0;
  // `tiles` consecutive tiles at once (the drivers call this): run() per tile, unless the layer
  // shares per-block work between neighbouring tiles (the IME2 decode combines four tiles' lanes
  // in one instruction). Each tile's outputs are bitwise those of run().
  virtual void run_tiles(const std::uint8_t* codes, const fp16_t* pairs, std::int64_t tiles,
                         const TileStrides& at, float* acc) const {
    for (std::int64_t i = 0; i < tiles; ++i)
      run(codes + i * at.code_bytes, pairs + 2 * i * at.pairs, acc + i * at.rows);
  }
  // After all tiles: throws when the microkernel met data it cannot compute (the IME2 `.hp` body's
  // out-of-range block scales: std::domain_error). Default: nothing to report.
  virtual void finish() const {}
};

struct LinearDecode {
  const char* name;  // e.g. "linear_decode-w4b64-srows-m1-e8m1-rvv"
  // Whether the microkernel reads weights packed like `w` (layout, rows per tile).
  bool (*reads)(const W4B64Packed& w);
  // Binds the body to one call (throws std::invalid_argument for weights it cannot read).
  BodyPtr<DecodeTileBody> (*bind)(const PackedActivations& a, const W4B64Packed& w,
                                  const LinearOptions& options);
  BindStoreFn bind_store = nullptr;  // null: the scalar epilogue
};

// Layout predicates most microkernels use.
inline bool reads_rowtile32(const W4B64Packed& w) {
  return w.layout == W4B64Layout::kRowTile32;
}
inline bool reads_rowtile32_or_ime2(const W4B64Packed& w) {
  return w.layout == W4B64Layout::kRowTile32 || w.layout == W4B64Layout::kIme2;
}

// The body of layers whose tile function reads the activation codes and block sums directly.
template <DecodeRowTileFn Fn>
BodyPtr<DecodeTileBody> bind_row_tile(const PackedActivations& a, const W4B64Packed& w,
                                      const LinearOptions&) {
  class Body final : public DecodeTileBody {
   public:
    Body(const PackedActivations& a, const W4B64Packed& w)
        : x_(a.codes.data()), sums_(a.block_sum.data()), nb_(w.blocks_per_row()) {}
    void run(const std::uint8_t* codes, const fp16_t* pairs, float* acc) const override {
      Fn(codes, pairs, x_, sums_, nb_, acc);
    }

   private:
    const std::int8_t* x_;
    const std::int32_t* sums_;
    std::int64_t nb_;
  };
  return make_body<Body, DecodeTileBody>(a, w);
}

// ---- prefill (activations in the M4 pack)

inline constexpr int kMaxGroupRows = 8;  // activation rows per prefill task, at most

// acc[r * w.row_tile + i] (r < rows, i < w.row_tile) = the block-reduced sum of activation row
// group * group_rows + r against weight row i of one tile (codes, pairs as for decode), before
// the epilogue.
class PrefillTileBody {
 public:
  virtual ~PrefillTileBody() = default;
  virtual void run(std::int64_t group, int rows, const std::uint8_t* codes, const fp16_t* pairs,
                   float* acc) const = 0;
  // Consecutive tiles one run_groups call may take (1: a tile at a time).
  virtual std::int64_t tiles_per_call() const { return 1; }
  // `groups` consecutive groups from `group` (group_rows rows each; rows past M are the pack's
  // zero rows) against `tiles` (<= tiles_per_call()) consecutive tiles at the strides `at`, by
  // output row: acc[(g * group_rows + r) * tiles * at.rows + i * at.rows + j] = run()'s
  // acc[r * at.rows + j] of group g and tile i, so the driver stores a run of groups' span with one
  // epilogue call. Default: run() per group.
  virtual void run_groups(std::int64_t group, std::int64_t groups, int group_rows, std::int64_t m,
                          const std::uint8_t* codes, const fp16_t* pairs, std::int64_t tiles,
                          const TileStrides& at, float* acc) const {
    (void)tiles;  // 1 unless tiles_per_call() says otherwise
    for (std::int64_t g = 0; g < groups; ++g) {
      const std::int64_t row0 = (group + g) * group_rows;
      run(group + g, static_cast<int>(std::min<std::int64_t>(group_rows, m - row0)), codes, pairs,
          acc + g * group_rows * at.rows);
    }
  }
};

// One M4 group (kPrefillRowsPerTask activation rows) against one weight tile.
struct PrefillTileArgs {
  const std::int8_t* x;       // the group's codes: block b's 4 rows x 64 at x + b * 256 (M4 pack)
  const std::int32_t* sums;   // block sum of row r, block b at sums[r * nb + b] (r < rows)
  int rows;                   // valid rows of the group (padded rows have zero codes)
  const std::uint8_t* codes;  // the weight tile, as for decode
  const fp16_t* pairs;
  std::int64_t nb;  // K / 64
  int row_tile;     // weight rows of the tile (R)
};

// Tile function of layers whose prefill needs no per-call state: the PrefillTileBody::run contract
// on one M4 group (acc: rows x row_tile floats, row stride row_tile).
using PrefillTileFn = void (*)(const PrefillTileArgs& t, float* acc);

// The body of such layers; instantiate it in the layer's translation unit so that Fn inlines.
template <PrefillTileFn Fn>
BodyPtr<PrefillTileBody> bind_prefill_tile(const PackedActivations& a, const W4B64Packed& w) {
  class Body final : public PrefillTileBody {
   public:
    Body(const PackedActivations& a, const W4B64Packed& w)
        : a_(a), nb_(w.blocks_per_row()), row_tile_(w.row_tile) {}
    void run(std::int64_t group, int rows, const std::uint8_t* codes, const fp16_t* pairs,
             float* acc) const override {
      Fn({a_.codes.data() + group * nb_ * kPrefillRowsPerTask * 64,
          a_.block_sum.data() + group * kPrefillRowsPerTask * nb_, rows, codes, pairs, nb_,
          row_tile_},
         acc);
    }

   private:
    const PackedActivations& a_;
    std::int64_t nb_;
    int row_tile_;
  };
  return make_body<Body, PrefillTileBody>(a, w);
}

struct LinearPrefill {
  const char* name;  // e.g. "linear_prefill-w4b64-srows-m4-e8m1-rvv"
  int group_rows;    // activation rows per task: 4 (one M4 group) or 8 (the IME2 tile M)
  bool (*reads)(const W4B64Packed& w);
  // Binds to one call; may prepare per-call operands in parallel on `pool`.
  BodyPtr<PrefillTileBody> (*bind)(const PackedActivations& a, const W4B64Packed& w,
                                   WorkerPool& pool);
  BindStoreFn bind_store = nullptr;  // null: the scalar epilogue
};

// A layer's variants of one Linear microkernel. `all` lists every variant (what a tuner may
// choose among); pick(w) is the layer's default for weights packed like w on this CPU (null when
// no variant reads them). Dispatch resolves a requested name against `all`.
template <typename Kernel>
struct LinearVariants {
  std::span<const Kernel> all;
  const Kernel* (*pick)(const W4B64Packed& w);
};

// The variant named `name` among `v.all`, or v.pick(w) when the name is empty; null when unknown.
template <typename Kernel>
const Kernel* find_variant(const LinearVariants<Kernel>& v, std::string_view name,
                           const W4B64Packed& w) {
  if (name.empty() || name == "auto") return v.pick(w);
  for (const Kernel& k : v.all)
    if (name == k.name) return &k;
  return nullptr;
}

// The variants of a layer that offers one microkernel: it, when it reads w.
template <const auto& Kernel>
const auto* pick_only(const W4B64Packed& w) {
  return Kernel.reads(w) ? &Kernel : nullptr;
}

// Packs kRowTile32 weights into the layout a layer's Linear kernels read best on this CPU, with
// `rows` rows per tile (> 0: pack_w4b64_for resolves 0 through `default_rows` first).
// default_rows: the layer's rows per tile for the running VLEN and an N x K weight;
// tcm_block_bytes > 0: the decode TCM pipeline will stage tiles in blocks of that size, so two
// tiles must fit in one.
// unpack: the inverse, back to kRowTile32 (for references and dumps: k3k::rowtile32_of).
struct WeightPacking {
  const char* name;  // the layout, e.g. "srows"
  int (*default_rows)(std::int64_t n, std::int64_t k, std::int64_t tcm_block_bytes);
  W4B64Packed (*pack)(W4B64Packed rowtile32, int rows);
  W4B64Layout layout;  // what pack produces
  W4B64Packed (*unpack)(const W4B64Packed& packed);
};

// default_rows of the layers that read 32-row tiles only (generic, ime2).
inline int rowtile32_rows(std::int64_t /*n*/, std::int64_t /*k*/,
                          std::int64_t /*tcm_block_bytes*/) {
  return kW4RowTile;
}

}  // namespace k3k::ukernel
