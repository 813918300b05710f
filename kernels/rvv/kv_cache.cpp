// RVV KV-cache appends: the generic layer's task split (kv head x 64-token chunk for kv_append,
// kv head for kv_append_one), RoPE tables (k3k::RopeTable) and storage (k3k::KvCache), with the
// per-row work vectorised:
//   * K: rotate-half RoPE on contiguous halves (rvv_math.h rope_rotate, e32m4): one vfmul + one
//     fused vfmsac/vfmacc per rotated component, the sequence clang emits for the generic scalar
//     rope_rotate (default -ffp-contract=on fuses a*c - fl(b*s) and b*c + fl(a*s)), so stored K is
//     BIT-IDENTICAL to the generic layer's (fp32 and, after the identical fp16 rounding, fp16) on
//     this toolchain; only a different contraction choice in the generic build could make them
//     differ, and then by one rounding per component, inside reference::kv_stored_k_bound.
//   * V: fp32 copy (e32m8 load/store) or fp16 rounding by integer bit manipulation (e32m4 ->
//     e16m2), bitwise equal to k3k::fp32_to_fp16; stored V bits are identical to the generic layer.
//   * fp16 K: rotated into a per-worker fp32 row, then converted like V.
// The stored bits do not depend on the worker count (each row has one writer, no reductions).
#include <algorithm>

#include "generic/op_checks.h"
#include "generic/vec_math.h"
#include "k3k/kv_cache.h"
#include "k3k/rvv.h"
#include "rvv/rvv_math.h"

namespace k3k::rvv {

namespace {

using generic_detail::fail;

constexpr std::int64_t kAppendTokensPerTask = 64;  // as the generic layer

// The generic layer's checks (kernels/generic/kv_cache.cpp keeps its copy in an anonymous
// namespace); messages are identical so that callers see the same errors on every path.
// Writes tokens [t_begin, t_end) of kv head `head`; `scratch` holds head_dim floats (fp16 only).
void write_rows(KvCache& cache, const float* k, const float* v, const RopeTable& table, int head,
                std::int64_t t_begin, std::int64_t t_end, float* scratch) {
  const int hd = cache.head_dim();
  const int half = table.half();
  const std::int64_t row_stride = static_cast<std::int64_t>(cache.n_kv_heads()) * hd;
  const std::int64_t pos0 = cache.length();
  for (std::int64_t t = t_begin; t < t_end; ++t) {
    const std::int64_t pos = pos0 + t;
    const std::size_t off = cache.row_offset(head, cache.slot(pos));
    const float* ks = k + t * row_stride + static_cast<std::int64_t>(head) * hd;
    const float* vs = v + t * row_stride + static_cast<std::int64_t>(head) * hd;
    if (cache.dtype() == KvDtype::f32) {
      rvv_detail::rope_rotate(ks, cache.k_f32() + off, hd, half, table.cos_at(pos),
                              table.sin_at(pos));
      rvv_detail::copy_row(vs, cache.v_f32() + off, hd);
    } else {
      rvv_detail::rope_rotate(ks, scratch, hd, half, table.cos_at(pos), table.sin_at(pos));
      rvv_detail::f32_to_f16_row(scratch, cache.k_f16() + off, hd);
      rvv_detail::f32_to_f16_row(vs, cache.v_f16() + off, hd);
    }
  }
}

}  // namespace

void kv_append(KvCache& cache, std::span<const float> k, std::span<const float> v,
               std::int64_t tokens, WorkerPool& pool) {
  generic_detail::check_kv_append(cache, k.size(), v.size(), tokens, "kv_append");
  if (tokens == 0) return;
  const RopeTable table(cache.rope(), cache.length(), tokens, pool);
  const std::int64_t stride = generic_detail::scratch_stride(cache.head_dim());
  AlignedBuffer<float> scratch(
      cache.dtype() == KvDtype::f16 ? static_cast<std::size_t>(stride * pool.size()) : 0);
  const std::int64_t chunks = (tokens + kAppendTokensPerTask - 1) / kAppendTokensPerTask;
  pool.parallel_for(cache.n_kv_heads() * chunks, [&](std::int64_t task, int worker) {
    const int head = static_cast<int>(task / chunks);
    const std::int64_t t0 = (task % chunks) * kAppendTokensPerTask;
    float* s = scratch.empty() ? nullptr : scratch.data() + worker * stride;
    write_rows(cache, k.data(), v.data(), table, head, t0,
               std::min(tokens, t0 + kAppendTokensPerTask), s);
  });
  cache.set_length(cache.length() + tokens);
}

void kv_append_one(KvCache& cache, std::span<const float> k, std::span<const float> v,
                   WorkerPool& pool) {
  generic_detail::check_kv_append(cache, k.size(), v.size(), 1, "kv_append_one");
  const RopeTable table(cache.rope(), cache.length(), 1);  // serial: rotary_dim/2 cos+sin
  const std::int64_t stride = generic_detail::scratch_stride(cache.head_dim());
  AlignedBuffer<float> scratch(
      cache.dtype() == KvDtype::f16 ? static_cast<std::size_t>(stride * pool.size()) : 0);
  pool.parallel_for(cache.n_kv_heads(), [&](std::int64_t task, int worker) {
    float* s = scratch.empty() ? nullptr : scratch.data() + worker * stride;
    write_rows(cache, k.data(), v.data(), table, static_cast<int>(task), 0, 1, s);
  });
  cache.set_length(cache.length() + 1);
}

}  // namespace k3k::rvv
