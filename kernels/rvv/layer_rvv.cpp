// The RVV layer's microkernel table (contracts: kernels/ukernels/) and its CPU probe.
//
// Linear: the weights are packed at load time in kSignedRows with R rows per tile, R chosen for
// the running VLEN and the weight's shape (default_rows below): a strip's vl, and with it the work
// per instruction, grows with VLEN. Measured (qemu instruction counts, N = K = 2048, one worker,
// per weight in decode / per multiply-add in prefill): VLEN 256, 64-row LMUL-2 tiles 0.097 /
// 0.084 (32-row LMUL-1 tiles: 0.163 / 0.116); VLEN 1024, 256-row tiles 0.033 / 0.028, 128-row
// tiles 0.049 / 0.036. weight_rows is tunable and a table's value wins. The variants
// differ in LMUL (strip = VLEN/8 * L rows) and, for prefill, in how many activation rows share a
// pass; the default takes the LMUL whose strip covers a tile.
#include <algorithm>
#include <array>
#include <stdexcept>
#include <string>

#include "k3k/cpu.h"
#include "rvv/linear_strips.h"
#include "rvv/microkernels.h"

namespace k3k::rvv {

namespace {

bool reads_strips(const W4B64Packed& w) {
  return w.layout == W4B64Layout::kRowTile32 || w.layout == W4B64Layout::kSignedRows;
}

constexpr std::array<ukernel::LinearDecode, 2> kDecode{{
    {"linear_decode-w4b64-srows-m1-e8m1-rvv", reads_strips, bind_linear_decode_strips_e8m1,
     bind_store_linear_tile},
    {"linear_decode-w4b64-srows-m1-e8m2-rvv", reads_strips, bind_linear_decode_strips_e8m2,
     bind_store_linear_tile},
}};
constexpr std::array<ukernel::LinearPrefill, 2> kPrefill{{
    {"linear_prefill-w4b64-srows-m4-e8m1-rvv", kPrefillRowsPerTask, reads_strips,
     bind_linear_prefill_strips_m4_e8m1, bind_store_linear_tile},
    {"linear_prefill-w4b64-srows-m4-2x2-e8m2-rvv", kPrefillRowsPerTask, reads_strips,
     bind_linear_prefill_strips_m4_2x2_e8m2, bind_store_linear_tile},
}};

// LMUL 2 when a tile is wider than one LMUL-1 strip (64-row tiles up to VLEN 256), else LMUL 1.
bool wide_tile(const W4B64Packed& w) {
  return w.row_tile > static_cast<int>(cpu_features().vlenb);
}
const ukernel::LinearDecode* pick_decode(const W4B64Packed& w) {
  return reads_strips(w) ? &kDecode[wide_tile(w) ? 1 : 0] : nullptr;
}
const ukernel::LinearPrefill* pick_prefill(const W4B64Packed& w) {
  return reads_strips(w) ? &kPrefill[wide_tile(w) ? 1 : 0] : nullptr;
}

// Rows per tile for the running VLEN: one LMUL-2 strip of rows, min(256, VLEN/4), the fewest
// strips and so the fewest instructions per weight (a strip's K loop costs the same whatever its
// vl), but no more rows than the weight has (rounded up to whole strips of 16: padded rows cost
// bytes and never instructions), and, when the decode TCM pipeline will stage the tiles, tiles
// small enough for two to fit in one TCM block (else one LMUL-1 strip, or less). One worker's
// count at VLEN 1024 is the best of 64, 128 and 256 rows on every model shape, decode and prefill
// (docs/tuning-and-tables.md, held-out loss); at VLEN 256 it is 64 rows as before, 2% (mean) / 5%
// (worst) more decode instructions than 256 rows, which leave a worker fewer tiles. With several workers a weight of few tiles has few tasks (N = 1024
// at VLEN 1024: four): the instruction count is the objective here; a table's weight_rows wins.
int default_rows(std::int64_t n, std::int64_t k, std::int64_t tcm_block_bytes) {
  const int vlenb = static_cast<int>(cpu_features().vlenb);
  const int wide = std::max(64, std::min(2 * vlenb, kMaxRowTile));
  const int fit = static_cast<int>(std::clamp<std::int64_t>(
      (n + kMinSignedRows - 1) / kMinSignedRows * kMinSignedRows, kMinSignedRows, wide));
  if (tcm_block_bytes <= 0) return fit;
  for (int rows = fit; rows >= kMinSignedRows; rows -= kMinSignedRows)
    if (2 * W4B64Packed::packed_bytes(rows, k, rows) <= tcm_block_bytes) return rows;
  return kMinSignedRows;
}

W4B64Packed pack_signed_rows(W4B64Packed w, int rows) {
  return pack_w4b64_signed_rows(w, rows);
}

}  // namespace

const ukernel::LayerKernels& kernels() {
  static const ukernel::LayerKernels k{
      .quantize = {"quantize_pack-f32-i8b64-rvv", quantize_row},
      .weight_packing = {"srows", default_rows, pack_signed_rows, W4B64Layout::kSignedRows,
                         unpack_w4b64_signed_rows},
      .linear_prefill = {kPrefill, pick_prefill},
      .linear_decode = {kDecode, pick_decode},
      .linear_decode_fp16_block_scale = {nullptr, nullptr, nullptr},
      .embedding = {"embedding-w4b64-rvv", ukernel::reads_rows_layouts, embedding_row},
      .attention_prefill = {"attention_prefill-f32-online-rvv", attention_rotate_scale_q, fp16_rows,
                            attention_online_block, attention_divide_row},
      .attention_decode = {"attention_decode-f32-chunked-pairs-rvv", attention_rotate_scale_q,
                           attention_decode_chunk, attention_merge_chunks},
      .kv_append = {"kv_append-rope-rvv", kv_append_row_f32, kv_append_row_f16},
      .rmsnorm = {"rmsnorm-f32-rvv", rmsnorm_row},
      .swiglu = {"swiglu-f32-rvv", swiglu_range},
      .residual_add = {"residual_add-f32-rvv", residual_add_range},
      .argmax = {"argmax-f32-rvv", argmax_range},
      .gated_deltanet = {"gated_deltanet-f32-chunk-cols-rvv", gdn_dot, gdn_chunk_columns},
      .gdn_gates = {"gdn_gates-f32-rvv", gdn_gates_row},
      .l2norm = {"l2norm-f32-rvv", l2norm_row},
      .causal_conv = {"causal_conv1d-f32-rvv", causal_conv_block},
      .gated_rmsnorm = {"gated_rmsnorm-f32-rvv", gated_rmsnorm_row},
      .sigmoid_gate = {"sigmoid_gate-f32-rvv", sigmoid_gate_range},
  };
  return k;
}

const LayerProbe& probe() {
  static const LayerProbe p{
      [] {
        return cpu_features().vector ? std::nullopt
                                     : std::optional<std::string>("CPU has no RVV (hwcap V unset)");
      },
      [] { return std::string(); }, false};
  return p;
}

}  // namespace k3k::rvv
