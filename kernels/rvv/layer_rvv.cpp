// The RVV layer's microkernel table (contracts: kernels/ukernels/) and its CPU probe.
//
// Linear: the weights are packed at load time in kSignedRows with R rows per tile, R chosen for
// the running VLEN: R = max(64, VLEN/8), so a strip's vl, and with it the work per instruction,
// grows with VLEN (LMUL 2 strips of 64 rows at VLEN 256, LMUL 1 strips of 128 rows at VLEN 1024).
// Measured (qemu instruction counts, N = K = 2048, one worker): at VLEN 256, 64-row LMUL-2 tiles
// take 0.097 instructions per weight in decode and 0.084 per multiply-add in prefill (32-row LMUL-1
// tiles: 0.163 and 0.116). R is capped at VLEN/8 from VLEN 512 up so that N = 1024 still makes 8
// tasks (256-row tiles at VLEN 1024 count 0.033 / 0.028 but leave half of 8 workers idle there;
// weight_rows is tunable). The variants differ in LMUL (strip = VLEN/8 * L rows) and, for prefill,
// in how many activation rows share a pass; the default takes the LMUL whose strip covers a tile.
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
    {"linear_decode-w4b64-srows-m1-e8m1-rvv", reads_strips, bind_linear_decode_strips_e8m1},
    {"linear_decode-w4b64-srows-m1-e8m2-rvv", reads_strips, bind_linear_decode_strips_e8m2},
}};
constexpr std::array<ukernel::LinearPrefill, 2> kPrefill{{
    {"linear_prefill-w4b64-srows-m4-e8m1-rvv", kPrefillRowsPerTask, reads_strips,
     bind_linear_prefill_strips_m4_e8m1},
    {"linear_prefill-w4b64-srows-m4-2x2-e8m2-rvv", kPrefillRowsPerTask, reads_strips,
     bind_linear_prefill_strips_m4_2x2_e8m2},
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

int default_rows() {
  return std::max(64, static_cast<int>(cpu_features().vlenb));
}

W4B64Packed pack_signed_rows(W4B64Packed w, int rows) {
  return pack_w4b64_signed_rows(w, rows == 0 ? default_rows() : rows);
}

}  // namespace

const ukernel::LayerKernels& kernels() {
  static const ukernel::LayerKernels k{
      .quantize = {"quantize_pack-f32-i8b64-rvv", quantize_row},
      .weight_packing = {"srows", default_rows, pack_signed_rows},
      .linear_prefill = {kPrefill, pick_prefill},
      .linear_decode = {kDecode, pick_decode},
      .linear_decode_fp16_block_scale = {nullptr, nullptr, nullptr},
      .embedding = {"embedding-w4b64-rowtile32-rvv", embedding_row},
      .attention_prefill = {"attention_prefill-f32-online-rvv", attention_rotate_scale_q, fp16_row,
                            attention_online_block, attention_divide_row},
      .attention_decode = {"attention_decode-f32-chunked-pairs-rvv", attention_rotate_scale_q,
                           attention_decode_chunk, attention_merge_chunks},
      .kv_append = {"kv_append-rope-rvv", kv_append_row_f32, kv_append_row_f16},
      .rmsnorm = {"rmsnorm-f32-rvv", rmsnorm_row},
      .swiglu = {"swiglu-f32-rvv", swiglu_range},
      .residual_add = {"residual_add-f32-rvv", residual_add_range},
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
