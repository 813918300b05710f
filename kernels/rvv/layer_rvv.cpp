// The RVV layer's microkernel table (contracts: kernels/ukernels/) and its CPU probe.
#include "k3k/cpu.h"
#include "rvv/microkernels.h"

namespace k3k::rvv {

const ukernel::LayerKernels& kernels() {
  static const ukernel::LayerKernels k{
      .quantize = {"quantize_pack-f32-i8b64-rvv", quantize_row},
      .linear_prefill = {"linear_prefill-w4b64-rowtile32-m4n32-rvv", kPrefillRowsPerTask, false,
                         bind_linear_prefill_m4},
      .linear_decode = {"linear_decode-w4b64-rowtile32-m1n32-rvv", false,
                        ukernel::bind_row_tile<linear_decode_row_tile>},
      .linear_decode_fp16_block_scale = {nullptr, false, nullptr},
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
