// One switch per op: the only place that knows which layers exist.
#include "k3k/ops.h"

#include <stdexcept>
#include <string>

#include "k3k/embedding.h"
#include "k3k/small_ops.h"
#if defined(K3_HAVE_RVV)
#include "k3k/rvv.h"
#endif
#if defined(K3_HAVE_IME2)
#include "k3k/ime2.h"
#endif

namespace k3k::ops {

namespace {
[[noreturn]] void not_built(KernelPath path, const char* op) {
  throw std::invalid_argument(std::string(op) + ": the " + to_string(path) + " layer is not compiled into this binary");
}
}  // namespace

#if defined(K3_HAVE_IME2)
// IME2 builds always contain the RVV layer (CMake enforces it). Ops without matrix work have no
// IME2 kernel: their ime2 path is the RVV kernel (as on the K3, where attention and small ops run
// on RVV). K3_DISPATCH_IME2 names the ops that do have one.
#define K3_DISPATCH(op, ...)                                 \
  switch (path) {                                            \
    case KernelPath::kGeneric: return generic::op(__VA_ARGS__); \
    case KernelPath::kRvv:                                   \
    case KernelPath::kIme2: return rvv::op(__VA_ARGS__);     \
  }                                                          \
  not_built(path, #op);
#define K3_DISPATCH_IME2(op, ...)                            \
  switch (path) {                                            \
    case KernelPath::kGeneric: return generic::op(__VA_ARGS__); \
    case KernelPath::kRvv: return rvv::op(__VA_ARGS__);      \
    case KernelPath::kIme2: return ime2::op(__VA_ARGS__);    \
  }                                                          \
  not_built(path, #op);
#elif defined(K3_HAVE_RVV)
#define K3_DISPATCH(op, ...)                                 \
  switch (path) {                                            \
    case KernelPath::kGeneric: return generic::op(__VA_ARGS__); \
    case KernelPath::kRvv: return rvv::op(__VA_ARGS__);      \
    default: not_built(path, #op);                           \
  }
#else
#define K3_DISPATCH(op, ...)                                 \
  switch (path) {                                            \
    case KernelPath::kGeneric: return generic::op(__VA_ARGS__); \
    default: not_built(path, #op);                           \
  }
#endif
#if !defined(K3_HAVE_IME2)
#define K3_DISPATCH_IME2 K3_DISPATCH
#endif

void quantize_pack_prefill(KernelPath path, const float* a, PackedActivations& out, WorkerPool& pool) {
  K3_DISPATCH(quantize_pack_prefill, a, out, pool)
}
void quantize_pack_decode(KernelPath path, const float* a, PackedActivations& out) {
  K3_DISPATCH(quantize_pack_decode, a, out)
}
void linear_prefill_w4b64(KernelPath path, const PackedActivations& a, const W4B64Packed& w,
                          const LinearEpilogue& ep, float* out, WorkerPool& pool, const LinearTiling& tiling) {
  K3_DISPATCH_IME2(linear_prefill_w4b64, a, w, ep, out, pool, tiling)
}
void linear_decode_w4b64(KernelPath path, const PackedActivations& a, const W4B64Packed& w,
                         const LinearEpilogue& ep, float* out, WorkerPool& pool, const LinearTiling& tiling) {
  K3_DISPATCH_IME2(linear_decode_w4b64, a, w, ep, out, pool, tiling)
}
void embedding_lookup_w4b64(KernelPath path, const W4B64Packed& table, const std::int32_t* tokens,
                            std::int64_t count, float* out, WorkerPool& pool) {
  if (table.layout != W4B64Layout::kRowTile32) {
    throw std::invalid_argument("embedding_lookup_w4b64: the table must use the kRowTile32 layout");
  }
  K3_DISPATCH(embedding_lookup_w4b64, table, tokens, count, out, pool)
}
void attention_prefill(KernelPath path, const KvCache& cache, std::span<const float> q, std::int64_t tokens,
                       int n_q_heads, std::span<float> out, WorkerPool& pool, const AttentionTiling& tiling) {
  K3_DISPATCH(attention_prefill, cache, q, tokens, n_q_heads, out, pool, tiling)
}
void attention_decode(KernelPath path, const KvCache& cache, std::span<const float> q, int n_q_heads,
                      std::span<float> out, WorkerPool& pool, const DecodeTiling& tiling) {
  K3_DISPATCH(attention_decode, cache, q, n_q_heads, out, pool, tiling)
}
void kv_append(KernelPath path, KvCache& cache, std::span<const float> k, std::span<const float> v,
               std::int64_t tokens, WorkerPool& pool) {
  K3_DISPATCH(kv_append, cache, k, v, tokens, pool)
}
void kv_append_one(KernelPath path, KvCache& cache, std::span<const float> k, std::span<const float> v,
                   WorkerPool& pool) {
  K3_DISPATCH(kv_append_one, cache, k, v, pool)
}
void rmsnorm(KernelPath path, std::span<const float> x, std::span<const float> weight, std::span<float> out,
             std::int64_t rows, int dim, float eps, WorkerPool& pool) {
  K3_DISPATCH(rmsnorm, x, weight, out, rows, dim, eps, pool)
}
void swiglu(KernelPath path, std::span<const float> gate, std::span<const float> up, std::span<float> out,
            std::int64_t rows, std::int64_t dim, WorkerPool& pool) {
  K3_DISPATCH(swiglu, gate, up, out, rows, dim, pool)
}
void residual_add(KernelPath path, std::span<const float> a, std::span<const float> b, std::span<float> out,
                  std::int64_t rows, std::int64_t dim, WorkerPool& pool) {
  K3_DISPATCH(residual_add, a, b, out, rows, dim, pool)
}

#undef K3_DISPATCH
#undef K3_DISPATCH_IME2

}  // namespace k3k::ops
