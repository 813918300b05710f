// The generic layer's microkernel table (contracts: kernels/ukernels/).
#include <stdexcept>
#include <string>

#include "generic/microkernels.h"

namespace k3k::generic {

namespace {

constexpr ukernel::LinearPrefill kPrefill{"linear_prefill-w4b64-rowtile32-m4n32-generic",
                                          kPrefillRowsPerTask, ukernel::reads_rowtile32,
                                          bind_linear_prefill_m4};
constexpr ukernel::LinearDecode kDecode{"linear_decode-w4b64-rowtile32-m1n32-generic",
                                        ukernel::reads_rowtile32,
                                        ukernel::bind_row_tile<linear_decode_row_tile>};

W4B64Packed copy_rowtile32(const W4B64Packed& w) {
  W4B64Packed p;
  p.n = w.n;
  p.k = w.k;
  p.codes = AlignedBuffer<std::uint8_t>::copy_of(w.codes.span());
  p.pairs = AlignedBuffer<fp16_t>::copy_of(w.pairs.span());
  return p;
}

// The generic kernels read kRowTile32 as it comes.
W4B64Packed keep_rowtile32(W4B64Packed w, int rows) {
  if (rows != kW4RowTile) {
    throw std::invalid_argument("generic layer: weights are read in 32-row tiles, got rows=" +
                                std::to_string(rows));
  }
  return w;
}

}  // namespace

const ukernel::LayerKernels& kernels() {
  static const ukernel::LayerKernels k{
      .quantize = {"quantize_pack-f32-i8b64-generic", quantize_row},
      .weight_packing = {"rowtile32", ukernel::rowtile32_rows, keep_rowtile32,
                         W4B64Layout::kRowTile32, copy_rowtile32},
      .linear_prefill = {{&kPrefill, 1}, ukernel::pick_only<kPrefill>},
      .linear_decode = {{&kDecode, 1}, ukernel::pick_only<kDecode>},
      .linear_decode_fp16_block_scale = {nullptr, nullptr, nullptr},
      .embedding = {"embedding-w4b64-generic", ukernel::reads_rows_layouts, embedding_row},
      .attention_prefill = {"attention_prefill-f32-online-lanes16-generic",
                            attention_rotate_scale_q, fp16_rows, attention_online_block,
                            attention_divide_row},
      .attention_decode = {"attention_decode-f32-chunked-lanes16-generic", attention_rotate_scale_q,
                           attention_decode_chunk, attention_merge_chunks},
      .kv_append = {"kv_append-rope-generic", kv_append_row_f32, kv_append_row_f16},
      .rmsnorm = {"rmsnorm-f32-lanes16-generic", rmsnorm_row},
      .swiglu = {"swiglu-f32-generic", swiglu_range},
      .residual_add = {"residual_add-f32-generic", residual_add_range},
      .argmax = {"argmax-f32-generic", argmax_range},
      .gated_deltanet = {"gated_deltanet-f32-chunk-cols-generic", gdn_dot, gdn_chunk_columns},
      .gdn_gates = {"gdn_gates-f32-generic", gdn_gates_row},
      .l2norm = {"l2norm-f32-lanes16-generic", l2norm_row},
      .causal_conv = {"causal_conv1d-f32-generic", causal_conv_block},
      .gated_rmsnorm = {"gated_rmsnorm-f32-lanes16-generic", gated_rmsnorm_row},
      .sigmoid_gate = {"sigmoid_gate-f32-generic", sigmoid_gate_range},
  };
  return k;
}

}  // namespace k3k::generic
