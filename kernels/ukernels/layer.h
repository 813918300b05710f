// A kernel layer as dispatch sees it: the microkernels of every op, with a name each. Dispatch
// (kernels/dispatch/) picks a layer and hands the op's driver its entry; a layer provides
// microkernels, never a driver. Entries a layer lacks are null (name == nullptr).
#pragma once

#include "ukernels/attention.h"
#include "ukernels/deltanet.h"
#include "ukernels/embedding.h"
#include "ukernels/kv_append.h"
#include "ukernels/linear.h"
#include "ukernels/quantize.h"
#include "ukernels/row_ops.h"

namespace k3k::ukernel {

struct LayerKernels {
  Quantize quantize;
  WeightPacking weight_packing;  // the layout this layer's Linear kernels read best
  LinearVariants<LinearPrefill> linear_prefill;
  LinearVariants<LinearDecode> linear_decode;
  LinearDecode linear_decode_fp16_block_scale;  // IME2 `.hp` only
  Embedding embedding;
  AttentionPrefill attention_prefill;
  AttentionDecode attention_decode;
  KvAppend kv_append;
  Rmsnorm rmsnorm;
  Swiglu swiglu;
  ResidualAdd residual_add;
  Argmax argmax;
  // Gated DeltaNet (Qwen3.5 linear attention) and the attention output gate.
  GatedDeltaNet gated_deltanet;
  GdnGates gdn_gates;
  L2Norm l2norm;
  CausalConv causal_conv;
  GatedRmsnorm gated_rmsnorm;
  SigmoidGate sigmoid_gate;
};

}  // namespace k3k::ukernel
