// The dispatched ops: each hands its driver the chosen layer's microkernels (the only switch over
// layers is dispatch/layers.cpp).
#include <stdexcept>
#include <string>

#include "dispatch/layers.h"
#include "drivers/drivers.h"
#include "k3k/attention.h"
#include "k3k/embedding.h"
#include "k3k/kv_cache.h"
#include "k3k/linear.h"
#include "k3k/quantize.h"
#include "k3k/small_ops.h"
#include "k3k/tcm_linear.h"

namespace k3k {

using dispatch::usable_kernels;

void quantize_pack_prefill(KernelPath path, const float* a, PackedActivations& out,
                           WorkerPool& pool) {
  driver::quantize_pack_prefill(usable_kernels(path, "quantize_pack_prefill").quantize, a, out,
                                pool);
}

void quantize_pack_decode(KernelPath path, const float* a, PackedActivations& out) {
  driver::quantize_pack_decode(usable_kernels(path, "quantize_pack_decode").quantize, a, out);
}

void linear_prefill_w4b64(KernelPath path, const PackedActivations& a, const W4B64Packed& w,
                          const LinearEpilogue& ep, float* out, WorkerPool& pool,
                          const LinearTiling& tiling) {
  driver::linear_prefill(usable_kernels(path, "linear_prefill_w4b64").linear_prefill, a, w, ep, out,
                         pool, tiling);
}

void linear_decode_w4b64(KernelPath path, const PackedActivations& a, const W4B64Packed& w,
                         const LinearEpilogue& ep, float* out, WorkerPool& pool,
                         const LinearTiling& tiling, const LinearDecodeOptions& options) {
  const ukernel::LayerKernels& layer = usable_kernels(path, "linear_decode_w4b64");
  const ukernel::LinearDecode& uk = options.accumulation == Accumulation::kFp16BlockScale
                                        ? layer.linear_decode_fp16_block_scale
                                        : layer.linear_decode;
  if (uk.bind == nullptr) {
    throw std::invalid_argument(
        std::string("linear_decode_w4b64: fp16 block-scale accumulation has no ") +
        to_string(path) + " microkernel (ime2 only)");
  }
  if (options.tcm_workspace != nullptr) {
    static const TcmDecodeParams kDefaults;
    const TcmDecodeParams& params = options.tcm_params != nullptr ? *options.tcm_params : kDefaults;
    TcmGateDecision decided;
    const TcmGateDecision* gate = options.tcm_gate;
    if (gate == nullptr) {
      decided = decide_tcm_decode(path, w, options.tcm_workspace, params, pool.size());
      gate = &decided;
    }
    if (gate->use_tcm) {
      const TcmPipelineStats stats = driver::linear_decode_tcm(
          uk, *gate, a, w, ep, out, pool, *options.tcm_workspace, params, tiling);
      if (options.tcm_stats != nullptr) *options.tcm_stats = stats;
      return;
    }
  }
  driver::linear_decode(uk, a, w, ep, out, pool, tiling);
  if (options.tcm_stats != nullptr) *options.tcm_stats = {};
}

void embedding_lookup_w4b64(KernelPath path, const W4B64Packed& table, const std::int32_t* tokens,
                            std::int64_t count, float* out, WorkerPool& pool) {
  driver::embedding_lookup(usable_kernels(path, "embedding_lookup_w4b64").embedding, table, tokens,
                           count, out, pool);
}

void attention_prefill(KernelPath path, const KvCache& cache, std::span<const float> q,
                       std::int64_t tokens, int n_q_heads, std::span<float> out, WorkerPool& pool,
                       const AttentionTiling& tiling, float scale) {
  driver::attention_prefill(usable_kernels(path, "attention_prefill").attention_prefill, cache, q,
                            tokens, n_q_heads, out, pool, tiling, scale);
}

void attention_decode(KernelPath path, const KvCache& cache, std::span<const float> q,
                      int n_q_heads, std::span<float> out, WorkerPool& pool,
                      const DecodeTiling& tiling, float scale) {
  driver::attention_decode(usable_kernels(path, "attention_decode").attention_decode, cache, q,
                           n_q_heads, out, pool, tiling, scale);
}

void kv_append(KernelPath path, KvCache& cache, std::span<const float> k, std::span<const float> v,
               std::int64_t tokens, WorkerPool& pool) {
  driver::kv_append(usable_kernels(path, "kv_append").kv_append, cache, k, v, tokens, pool);
}

void kv_append_one(KernelPath path, KvCache& cache, std::span<const float> k,
                   std::span<const float> v, WorkerPool& pool) {
  driver::kv_append_one(usable_kernels(path, "kv_append_one").kv_append, cache, k, v, pool);
}

void rmsnorm(KernelPath path, std::span<const float> x, std::span<const float> weight,
             std::span<float> out, std::int64_t rows, int dim, float eps, WorkerPool& pool) {
  driver::rmsnorm(usable_kernels(path, "rmsnorm").rmsnorm, x, weight, out, rows, dim, eps, pool);
}

void swiglu(KernelPath path, std::span<const float> gate, std::span<const float> up,
            std::span<float> out, std::int64_t rows, std::int64_t dim, WorkerPool& pool) {
  driver::swiglu(usable_kernels(path, "swiglu").swiglu, gate, up, out, rows, dim, pool);
}

void residual_add(KernelPath path, std::span<const float> a, std::span<const float> b,
                  std::span<float> out, std::int64_t rows, std::int64_t dim, WorkerPool& pool) {
  driver::residual_add(usable_kernels(path, "residual_add").residual_add, a, b, out, rows, dim,
                       pool);
}

}  // namespace k3k
