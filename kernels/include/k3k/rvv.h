// The RVV 1.0 layer: the same ops and signatures as the generic layer (k3k::generic), written with
// __riscv_ intrinsics, VLEN-agnostic (vsetvl everywhere). Compiled only for riscv64 with
// K3_ENABLE_RVV; callers normally go through k3k/ops.h with a KernelPath.
#pragma once

#include <cstdint>
#include <span>

#include "k3k/attention.h"
#include "k3k/kv_cache.h"
#include "k3k/linear.h"
#include "k3k/quantize.h"
#include "k3k/w4b64.h"
#include "k3k/worker_pool.h"

namespace k3k::rvv {

void quantize_pack_prefill(const float* a, PackedActivations& out, WorkerPool& pool);
void quantize_pack_decode(const float* a, PackedActivations& out);
void linear_prefill_w4b64(const PackedActivations& a, const W4B64Packed& w, const LinearEpilogue& ep,
                          float* out, WorkerPool& pool, const LinearTiling& tiling = {});
void linear_decode_w4b64(const PackedActivations& a, const W4B64Packed& w, const LinearEpilogue& ep,
                         float* out, WorkerPool& pool, const LinearTiling& tiling = {});
void embedding_lookup_w4b64(const W4B64Packed& table, const std::int32_t* tokens, std::int64_t count,
                            float* out, WorkerPool& pool);

void attention_prefill(const KvCache& cache, std::span<const float> q, std::int64_t tokens,
                       int n_q_heads, std::span<float> out, WorkerPool& pool,
                       const AttentionTiling& tiling = {}, float scale = 0.0f);
void attention_decode(const KvCache& cache, std::span<const float> q, int n_q_heads,
                      std::span<float> out, WorkerPool& pool, const DecodeTiling& tiling = {},
                      float scale = 0.0f);
void kv_append(KvCache& cache, std::span<const float> k, std::span<const float> v,
               std::int64_t tokens, WorkerPool& pool);
void kv_append_one(KvCache& cache, std::span<const float> k, std::span<const float> v,
                   WorkerPool& pool);
void rmsnorm(std::span<const float> x, std::span<const float> weight, std::span<float> out,
             std::int64_t rows, int dim, float eps, WorkerPool& pool);
void swiglu(std::span<const float> gate, std::span<const float> up, std::span<float> out,
            std::int64_t rows, std::int64_t dim, WorkerPool& pool);
void residual_add(std::span<const float> a, std::span<const float> b, std::span<float> out,
                  std::int64_t rows, std::int64_t dim, WorkerPool& pool);

}  // namespace k3k::rvv
