// KV cache for one attention layer, in the cache dtype (fp32, or fp16 as raw binary16 bits). K is
// stored ROTATED: appends apply RoPE at each token's position on write, so attention kernels only
// rotate Q.
//
// Layout (part of the kernel ABI, k3k/table_rules.h):
//   V: [n_kv_heads][capacity][head_dim], a slot's row contiguous: the P.V accumulation scales a
//      whole row by one weight (a vector op over head_dim).
//   K: [n_kv_heads][key blocks][head_dim][key_block], key blocks of key_block slots transposed, so
//      one dim's values of key_block consecutive slots are contiguous: one vector op over keys
//      advances that many keys' scores (q.k as a multiply-add per dim, no reduction per key).
//      capacity is rounded up to whole key blocks in storage; slot s is column s % key_block of
//      block s / key_block. The default key_block is the keys of one e32 LMUL-4 vector register
//      group of this CPU (vlenb keys: 128 at VLEN 1024), at least 16 (kDefaultKeyBlockMin).
//
// Positions: the token appended as the p-th (0-based) has position p; length() is the number of
// tokens appended so far (= the next position).
//   contiguous mode: position p lives in slot p; appending beyond capacity throws.
//   ring mode:       position p lives in slot p % capacity; once length > capacity the oldest
//                    positions are overwritten and the visible ones are
//                    [first_visible(), length()) = [max(0, length - capacity), length).
//                    One append may write at most `capacity` tokens.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

#include "k3k/aligned_buffer.h"
#include "k3k/dispatch.h"
#include "k3k/fp16.h"
#include "k3k/rope.h"
#include "k3k/worker_pool.h"

namespace k3k {

enum class KvDtype { f32, f16 };
const char* to_string(KvDtype dtype);

// Branch-free fp16 -> fp32 row conversion used by the kernels' fp16 load paths (vectorisable);
// bitwise equal to fp16_to_fp32 for all 65536 inputs. The sign-less half bits shifted into place
// read as a float 2^-112 times the value (normal and subnormal halves alike); multiplying by 2^112
// is exact (this assumes IEEE subnormal handling, i.e. no FTZ/DAZ, the default on every target).
// Inf/NaN (exponent 31) are selected separately.
inline void fp16_to_fp32_row(const fp16_t* __restrict src, float* __restrict dst, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) {
    const std::uint32_t h = src[i];
    const std::uint32_t magnitude = (h & 0x7FFFu) << 13;
    const std::uint32_t finite =
        std::bit_cast<std::uint32_t>(std::bit_cast<float>(magnitude) * 0x1.0p112f);
    const std::uint32_t special = 0u - static_cast<std::uint32_t>((h & 0x7C00u) == 0x7C00u);
    const std::uint32_t bits = (finite & ~special) | ((magnitude | 0x7F800000u) & special);
    dst[i] = std::bit_cast<float>(bits | ((h & 0x8000u) << 16));
  }
}

struct KvCacheConfig {
  int n_kv_heads = 0;
  int head_dim = 0;
  std::int64_t capacity = 0;  // tokens
  KvDtype dtype = KvDtype::f32;
  bool ring = false;
  RopeConfig rope{};  // applied to K on write (and to Q by the attention kernels)
  int key_block = 0;  // keys per K block, in [1, kMaxKeyBlock]; 0: default_key_block()
};

inline constexpr int kDefaultKeyBlockMin = 16;
inline constexpr int kMaxKeyBlock = 4096;
// max(kDefaultKeyBlockMin, vlenb of this CPU): one e32m4 register group of keys.
int default_key_block();

class KvCache {
 public:
  // Validates the configuration (std::invalid_argument naming the field) and allocates zeroed
  // storage.
  explicit KvCache(const KvCacheConfig& config);

  const KvCacheConfig& config() const { return config_; }
  int n_kv_heads() const { return config_.n_kv_heads; }
  int head_dim() const { return config_.head_dim; }
  std::int64_t capacity() const { return config_.capacity; }
  KvDtype dtype() const { return config_.dtype; }
  bool ring() const { return config_.ring; }
  const RopeConfig& rope() const { return config_.rope; }

  std::int64_t length() const { return length_; }
  // Oldest position still stored (0 unless a ring cache has wrapped).
  std::int64_t first_visible() const {
    return config_.ring && length_ > config_.capacity ? length_ - config_.capacity : 0;
  }
  std::int64_t visible() const { return length_ - first_visible(); }
  std::int64_t slot(std::int64_t pos) const { return config_.ring ? pos % config_.capacity : pos; }
  int key_block() const { return config_.key_block; }  // resolved: never 0
  // Element offset of (head, slot)'s V row.
  std::size_t v_offset(int head, std::int64_t slot) const {
    return static_cast<std::size_t>((static_cast<std::int64_t>(head) * config_.capacity + slot) *
                                    config_.head_dim);
  }
  // Element offset of (head, slot)'s K component 0; component d is d * key_block() further.
  std::size_t k_offset(int head, std::int64_t slot) const {
    const std::int64_t kb = config_.key_block;
    return static_cast<std::size_t>(head * k_head_elements() + (slot / kb) * kb * config_.head_dim +
                                    slot % kb);
  }
  // Elements of one kv head's K storage (whole key blocks).
  std::int64_t k_head_elements() const {
    const std::int64_t kb = config_.key_block;
    return (config_.capacity + kb - 1) / kb * kb * config_.head_dim;
  }
  std::size_t k_elements() const {
    return static_cast<std::size_t>(config_.n_kv_heads * k_head_elements());
  }
  std::size_t v_elements() const {
    return static_cast<std::size_t>(config_.n_kv_heads * config_.capacity * config_.head_dim);
  }

  // Raw storage (layout above). The accessors of the other dtype return nullptr.
  float* k_f32() { return k32_.data(); }
  float* v_f32() { return v32_.data(); }
  const float* k_f32() const { return k32_.data(); }
  const float* v_f32() const { return v32_.data(); }
  fp16_t* k_f16() { return k16_.data(); }
  fp16_t* v_f16() { return v16_.data(); }
  const fp16_t* k_f16() const { return k16_.data(); }
  const fp16_t* v_f16() const { return v16_.data(); }
  std::size_t bytes() const;  // K + V storage

  // Kernels call set_length after writing; reset() forgets every token (storage is not cleared).
  void set_length(std::int64_t length);
  void reset() {
    length_ = 0;
    append_rope_.reset();
  }

  // The RoPE table (k3k/rope.h) of the last append's positions, which the appends build anyway to
  // rotate K: attention whose queries are those positions (prefill right after kv_append, decode
  // right after kv_append_one) rotates Q with it instead of computing the same cos/sin again. A
  // table depends only on the RoPE configuration and the positions, so reusing it never changes a
  // bit. Null before the first append and after reset(); each append replaces it.
  const RopeTable* append_rope_table() const { return append_rope_.get(); }
  void keep_append_rope_table(std::shared_ptr<const RopeTable> table) {
    append_rope_ = std::move(table);
  }

 private:
  KvCacheConfig config_;
  std::int64_t length_ = 0;
  AlignedBuffer<float> k32_, v32_;
  AlignedBuffer<fp16_t> k16_, v16_;
  std::shared_ptr<const RopeTable> append_rope_;
};

// Prefill append (dispatched; KernelPath: k3k/dispatch.h): k and v are
// [tokens][n_kv_heads][head_dim] fp32, K UNROTATED. Token t gets position length() + t: K is
// rotated with the cache's RoPE at that position and stored (rounded to fp16 for f16 caches); V is
// copied (or rounded to fp16). Then length() += tokens. Parallel over (kv head, token chunk); the
// stored bits do not depend on the worker count. Throws std::invalid_argument (before writing
// anything) on size mismatches, on overflowing a contiguous cache, and on tokens > capacity for a
// ring cache.
void kv_append(KernelPath path, KvCache& cache, std::span<const float> k, std::span<const float> v,
               std::int64_t tokens, WorkerPool& pool);

// Decode append of one token (k, v: [n_kv_heads][head_dim]); stores the same bits as kv_append
// with tokens = 1, without the prefill path's parallel table build.
void kv_append_one(KernelPath path, KvCache& cache, std::span<const float> k,
                   std::span<const float> v, WorkerPool& pool);

}  // namespace k3k
