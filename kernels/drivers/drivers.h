// One driver per op, written once over the op's microkernel contract (kernels/ukernels/): argument
// checks, task decomposition, scratch, threading and epilogue. Dispatch (kernels/dispatch/ops.cpp)
// calls them with the chosen layer's microkernels; nothing else does.
#pragma once

#include <cstdint>
#include <span>

#include "k3k/attention.h"
#include "k3k/deltanet.h"
#include "k3k/kv_cache.h"
#include "k3k/linear.h"
#include "k3k/quantize.h"
#include "k3k/tcm_attention.h"
#include "k3k/tcm_linear.h"
#include "k3k/w4b64.h"
#include "k3k/worker_pool.h"
#include "ukernels/layer.h"

namespace k3k::driver {

void quantize_pack_prefill(const ukernel::Quantize& uk, const float* a, PackedActivations& out,
                           WorkerPool& pool);
void quantize_pack_decode(const ukernel::Quantize& uk, const float* a, PackedActivations& out);

void linear_prefill(const ukernel::LinearPrefill& uk, const PackedActivations& a,
                    const W4B64Packed& w, const LinearEpilogue& ep, float* out, WorkerPool& pool,
                    const LinearTiling& tiling);
// Weights read from DRAM, tile_n output columns per task.
void linear_decode(const ukernel::LinearDecode& uk, const PackedActivations& a,
                   const W4B64Packed& w, const LinearEpilogue& ep, float* out, WorkerPool& pool,
                   const LinearTiling& tiling);
// Weights streamed through TCM by worker pairs (gate.use_tcm and a workspace required).
TcmPipelineStats linear_decode_tcm(const ukernel::LinearDecode& uk, const TcmGateDecision& gate,
                                   const PackedActivations& a, const W4B64Packed& w,
                                   const LinearEpilogue& ep, float* out, WorkerPool& pool,
                                   TcmWorkspace& workspace, const TcmDecodeParams& params,
                                   const LinearTiling& tiling);

void embedding_lookup(const ukernel::Embedding& uk, const W4B64Packed& table,
                      const std::int32_t* tokens, std::int64_t count, float* out, WorkerPool& pool);

void attention_prefill(const ukernel::AttentionPrefill& uk, const KvCache& cache,
                       std::span<const float> q, std::int64_t tokens, int n_q_heads,
                       std::span<float> out, WorkerPool& pool, const AttentionTiling& tiling,
                       float scale);
// Each worker's working set in its TCM block (gate.use_tcm and a workspace required).
TcmAttentionStats attention_prefill_tcm(const ukernel::AttentionPrefill& uk,
                                        const TcmAttentionGate& gate, const KvCache& cache,
                                        std::span<const float> q, std::int64_t tokens,
                                        int n_q_heads, std::span<float> out, WorkerPool& pool,
                                        const AttentionTiling& tiling, float scale,
                                        TcmWorkspace& workspace, const TcmAttentionParams& params);
void attention_decode(const ukernel::AttentionDecode& uk, const KvCache& cache,
                      std::span<const float> q, int n_q_heads, std::span<float> out,
                      WorkerPool& pool, const DecodeTiling& tiling, float scale);

void kv_append(const ukernel::KvAppend& uk, KvCache& cache, std::span<const float> k,
               std::span<const float> v, std::int64_t tokens, WorkerPool& pool);
void kv_append_one(const ukernel::KvAppend& uk, KvCache& cache, std::span<const float> k,
                   std::span<const float> v, WorkerPool& pool);

void rmsnorm(const ukernel::Rmsnorm& uk, std::span<const float> x, std::span<const float> weight,
             std::span<float> out, std::int64_t rows, int dim, float eps, WorkerPool& pool);
void swiglu(const ukernel::Swiglu& uk, std::span<const float> gate, std::span<const float> up,
            std::span<float> out, std::int64_t rows, std::int64_t dim, WorkerPool& pool);
void residual_add(const ukernel::ResidualAdd& uk, std::span<const float> a,
                  std::span<const float> b, std::span<float> out, std::int64_t rows,
                  std::int64_t dim, WorkerPool& pool);
std::int64_t argmax(const ukernel::Argmax& uk, std::span<const float> x);

// Gated DeltaNet (drivers/deltanet.cpp, drivers/deltanet_rows.cpp).
void gdn_prefill(const ukernel::GatedDeltaNet& uk, const GdnDims& dims, std::int64_t tokens,
                 const GdnInputs& in, std::span<float> state, std::span<float> out,
                 WorkerPool& pool, const GdnPrefillTiling& tiling);
void gdn_decode(const ukernel::GatedDeltaNet& uk, const GdnDims& dims, const GdnInputs& in,
                std::span<float> state, std::span<float> out, WorkerPool& pool,
                const GdnDecodeTiling& tiling);
void gdn_gates(const ukernel::GdnGates& uk, const float* a, std::int64_t a_stride, const float* b,
               std::int64_t b_stride, std::span<const float> a_log,
               std::span<const float> dt_bias, std::span<float> g, std::span<float> beta,
               std::int64_t tokens, int heads, WorkerPool& pool);
void l2norm(const ukernel::L2Norm& uk, const float* x, std::int64_t x_stride, float* y,
            std::int64_t y_stride, std::int64_t tokens, int heads, int dim, float eps, float scale,
            WorkerPool& pool);
void causal_conv1d(const ukernel::CausalConv& uk, std::span<const float> x,
                   std::span<const float> weight, std::span<float> state, std::span<float> y,
                   std::int64_t tokens, int channels, int kernel, WorkerPool& pool);
void gated_rmsnorm(const ukernel::GatedRmsnorm& uk, std::span<const float> x,
                   std::span<const float> z, std::span<const float> weight, std::span<float> y,
                   std::int64_t rows, int dim, float eps, WorkerPool& pool);
void sigmoid_gate(const ukernel::SigmoidGate& uk, std::span<const float> x,
                  std::span<const float> gate, std::span<float> out, WorkerPool& pool);

}  // namespace k3k::driver
