// Float64 references for RoPE, the KV cache and attention, with the per-element error bounds the
// generic kernels must meet (derivations next to the code in kernels/reference/*.cpp).
//
// Independence: the reference never reads the kernel's KvCache. RefKvCache is built from the same
// appended inputs and rotates the ORIGINAL unrotated K in double itself, so the kernel's
// rotate-on-write is checked too. For fp16 caches V is taken as the fp16-rounded input converted
// exactly to double (what the cache must hold), while K stays the exact double rotation: the fp16
// rounding of the stored, rotated K is accounted for in the bound (u16 * |k| per component).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "k3k/attention.h"
#include "k3k/kv_cache.h"
#include "k3k/rope.h"

namespace k3k::reference {

// ---- RoPE -------------------------------------------------------------------------------------

// One head vector at position pos, in double: out = rope(x) and out_abs = the rotation magnitude
// per component (|x_i| |cos| + |x_{i+h}| |sin| for rotated components, |x_d| for pass-through
// ones), which bounds |out| and is what every rotation error is relative to. out_abs may be null.
void rope_rotate(const RopeConfig& rope, std::int64_t pos, const float* x, int head_dim,
                 double* out, double* out_abs);

// x = [tokens][heads][head_dim], token t at position first_pos + t.
std::vector<double> rope(std::span<const float> x, std::int64_t tokens, int heads, int head_dim,
                         std::int64_t first_pos, const RopeConfig& rope);
// Per-element bound on |kernel rope_apply - rope|.
std::vector<double> rope_bound(std::span<const float> x, std::int64_t tokens, int heads,
                               int head_dim, std::int64_t first_pos, const RopeConfig& rope);
// Per-element bound on |stored K (as float) - rope(K)| for a cache of `dtype`, K = [tokens][heads]
// [head_dim] as appended at positions first_pos + t.
std::vector<double> kv_stored_k_bound(std::span<const float> k, std::int64_t tokens, int heads,
                                      int head_dim, std::int64_t first_pos, const RopeConfig& rope,
                                      KvDtype dtype);

// ---- KV cache mirror --------------------------------------------------------------------------

class RefKvCache {
 public:
  explicit RefKvCache(const KvCacheConfig& config);

  // Same inputs and the same position/slot rules (and argument checks) as k3k::kv_append.
  void append(std::span<const float> k, std::span<const float> v, std::int64_t tokens);

  const KvCacheConfig& config() const { return config_; }
  std::int64_t length() const { return length_; }
  std::int64_t first_visible() const {
    return config_.ring && length_ > config_.capacity ? length_ - config_.capacity : 0;
  }
  // Rows of a visible position (throws std::out_of_range otherwise): exact double rotation of the
  // appended K, its rotation magnitude (see rope_rotate), and V as the cache must store it.
  const double* k(int head, std::int64_t pos) const { return k_.data() + offset(head, pos); }
  const double* k_abs(int head, std::int64_t pos) const {
    return k_abs_.data() + offset(head, pos);
  }
  const double* v(int head, std::int64_t pos) const { return v_.data() + offset(head, pos); }

 private:
  std::size_t offset(int head, std::int64_t pos) const;
  KvCacheConfig config_;
  std::int64_t length_ = 0;
  std::vector<double> k_, k_abs_, v_;  // [n_kv_heads][capacity][head_dim], by slot
};

// ---- attention --------------------------------------------------------------------------------

// The accumulation structure of the implementation under test, which the bound is derived for.
struct AttentionErrorModel {
  // Roundings one product q_r * k_r goes through inside a score (its own included):
  // head_dim for a sequential dot, ceil(head_dim / L) + log2(L) for L interleaved lanes + a tree.
  std::int64_t dot_depth = 0;
  // Keys summed sequentially (from zero) before a rescaling merge: prefill kv_block, decode chunk.
  // A row/query with T visible keys goes through at most ceil(T / block) blocks.
  std::int64_t block = 0;
  // The most keys one block may hold, when the last absorbs a remainder (decode_chunks: up to
  // block + block / 2); 0 = block.
  std::int64_t longest_block = 0;
};
// The generic layer: dot products in kGenericReductionLanes lanes + pairwise tree.
AttentionErrorModel generic_prefill_error_model(int head_dim, const AttentionTiling& tiling);
AttentionErrorModel generic_decode_error_model(int head_dim, const DecodeTiling& tiling);

// The RVV layer (kernels/rvv/rvv_math.h): a length-n reduction (RMSNorm's sum of squares, the
// DeltaNet dots, the softmax sums) accumulates e32m4 lanes (VLMAX_m4 = vlenb elements) with
// vfmacc, folds m4 -> m2 -> m1 with two vfadd levels and closes with one vfredusum over the
// vlenb / 4 m1 lanes, whose tree order is implementation-defined: bounded as a sequential sum over
// those lanes. Roundings per product: ceil(n / vlenb) + 2 + vlenb / 4. vlenb = bytes per vector
// register (k3k::cpu_features().vlenb; a power of two >= 16).
std::int64_t rvv_dot_depth(std::int64_t n, int vlenb);
// Its attention scores run over key blocks (kernels/rvv/key_scores.h): one vector lane per key,
// the dims in blocks of 16, each block one fma chain from its first product, the block sums added
// in order: roundings per product min(head_dim, 16) + ceil(head_dim / 16) - 1, whatever VLEN. The
// softmax block sums use the reduction above (at most n - 1 roundings per term, as a sequential
// sum), and the RVV vector exp is within 1 ulp (relative error 1.39 * 2^-24, see rvv_math.h), so
// only dot_depth differs from the generic model.
std::int64_t rvv_score_depth(int head_dim);
AttentionErrorModel rvv_prefill_error_model(int head_dim, const AttentionTiling& tiling);
AttentionErrorModel rvv_decode_error_model(int head_dim, const DecodeTiling& tiling);

// Deliberate defects, for tests proving that the comparison catches a wrong kernel.
struct AttentionReferenceOptions {
  bool causal = true;            // false: every query also sees the keys after it
  bool interleaved_gqa = false;  // true: query head h reads kv head h % n_kv_heads (wrong mapping)
};

struct AttentionReference {
  std::vector<double> out;    // same layout as the kernel output
  std::vector<double> bound;  // per element: max allowed |kernel - out|
};

// Prefill: q = [tokens][n_q_heads][head_dim] unrotated, positions cache.length() - tokens + t.
// scale <= 0 means exactly 1/sqrt(head_dim) (the kernel's float rounding of it is in the bound);
// otherwise pass the kernel's float scale.
AttentionReference attention_prefill(const RefKvCache& cache, std::span<const float> q,
                                     std::int64_t tokens, int n_q_heads,
                                     const AttentionErrorModel& model, double scale = 0.0,
                                     const AttentionReferenceOptions& options = {});
// Decode: q = [n_q_heads][head_dim] unrotated at position cache.length() - 1.
AttentionReference attention_decode(const RefKvCache& cache, std::span<const float> q,
                                    int n_q_heads, const AttentionErrorModel& model,
                                    double scale = 0.0,
                                    const AttentionReferenceOptions& options = {});

// The bounds alone (same computation; use the functions above to get both at once).
std::vector<double> attention_prefill_bound(const RefKvCache& cache, std::span<const float> q,
                                            std::int64_t tokens, int n_q_heads,
                                            const AttentionErrorModel& model, double scale = 0.0);
std::vector<double> attention_decode_bound(const RefKvCache& cache, std::span<const float> q,
                                           int n_q_heads, const AttentionErrorModel& model,
                                           double scale = 0.0);

}  // namespace k3k::reference
