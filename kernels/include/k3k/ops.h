// The dispatching API: every op with the kernel path as its first argument (decide_path picks
// one). A path that is not compiled in throws std::invalid_argument. The ime2 path runs the IME2
// Linear kernels (weights in either W4B64 layout) and the RVV kernel of every other op; all other
// layers accept only kRowTile32 weights.
#pragma once

#include <cstdint>
#include <span>

#include "k3k/attention.h"
#include "k3k/dispatch.h"
#include "k3k/kv_cache.h"
#include "k3k/linear.h"
#include "k3k/quantize.h"
#include "k3k/w4b64.h"
#include "k3k/worker_pool.h"

namespace k3k::ops {

void quantize_pack_prefill(KernelPath path, const float* a, PackedActivations& out, WorkerPool& pool);
void quantize_pack_decode(KernelPath path, const float* a, PackedActivations& out);
void linear_prefill_w4b64(KernelPath path, const PackedActivations& a, const W4B64Packed& w,
                          const LinearEpilogue& ep, float* out, WorkerPool& pool, const LinearTiling& tiling);
void linear_decode_w4b64(KernelPath path, const PackedActivations& a, const W4B64Packed& w,
                         const LinearEpilogue& ep, float* out, WorkerPool& pool, const LinearTiling& tiling);
void embedding_lookup_w4b64(KernelPath path, const W4B64Packed& table, const std::int32_t* tokens,
                            std::int64_t count, float* out, WorkerPool& pool);
void attention_prefill(KernelPath path, const KvCache& cache, std::span<const float> q, std::int64_t tokens,
                       int n_q_heads, std::span<float> out, WorkerPool& pool, const AttentionTiling& tiling);
void attention_decode(KernelPath path, const KvCache& cache, std::span<const float> q, int n_q_heads,
                      std::span<float> out, WorkerPool& pool, const DecodeTiling& tiling);
void kv_append(KernelPath path, KvCache& cache, std::span<const float> k, std::span<const float> v,
               std::int64_t tokens, WorkerPool& pool);
void kv_append_one(KernelPath path, KvCache& cache, std::span<const float> k, std::span<const float> v,
                   WorkerPool& pool);
void rmsnorm(KernelPath path, std::span<const float> x, std::span<const float> weight, std::span<float> out,
             std::int64_t rows, int dim, float eps, WorkerPool& pool);
void swiglu(KernelPath path, std::span<const float> gate, std::span<const float> up, std::span<float> out,
            std::int64_t rows, std::int64_t dim, WorkerPool& pool);
void residual_add(KernelPath path, std::span<const float> a, std::span<const float> b, std::span<float> out,
                  std::int64_t rows, std::int64_t dim, WorkerPool& pool);

}  // namespace k3k::ops
