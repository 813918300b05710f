// Causal grouped-query attention over a KvCache (the dispatched ops; KernelPath: k3k/dispatch.h).
//
// Layouts: Q and the output are [tokens][n_q_heads][head_dim] fp32; Q arrives UNROTATED and the
// kernels rotate it with the cache's RoPE at its position (the cache already holds rotated K).
// Query head h reads kv head h / (n_q_heads / n_kv_heads). A query at position p sees the keys at
// positions [cache.first_visible(), p] (causal; in a wrapped ring cache only what is still stored).
// Scores are (q . k) * scale, scale = 1/sqrt(head_dim) rounded to float unless given (> 0).
//
// Both kernels make each task own disjoint outputs (or disjoint partial results merged in a fixed
// order), so outputs are bitwise identical for every WorkerPool size.
#pragma once

#include <cstdint>
#include <span>

#include "k3k/dispatch.h"
#include "k3k/kv_cache.h"
#include "k3k/small_ops.h"
#include "k3k/worker_pool.h"

namespace k3k {

// Prefill tiling. A task is (query head, tile of q_tile query rows); it walks the keys in blocks of
// kv_block positions aligned at cache.first_visible(), keeping a running max / sum per row
// (online softmax, one rescale per block) and never materialising the score matrix.
// kv_block sets the rescaling order and so changes the rounding of the result; q_tile does not
// (each row's reduction order depends only on kv_block), it only changes reuse and task count.
// q_tile 64 by default: a tile re-reads (and for fp16 caches converts) every key before it, so
// fewer, taller tiles cost fewer instructions (seq 32 / 64 / 128 / 200 with Qwen3's heads, one
// worker, RVV at VLEN 1024: 8.4 / 9.5 / 12 / 12% fewer than q_tile 16; 12% at VLEN 256 and 2.4%
// over an fp32 cache at seq 128), and a 64-row tile's arena (128 KiB at head_dim 128) fits a TCM
// block.
// prefetch_bytes: software prefetch (Zicbop prefetch.r, builds with K3_ENABLE_ZICBOP only; a hint
// that never changes a result) of the K/V rows this many bytes ahead in the kv head's storage while
// a block is gathered; 0 = off, at most 1 MiB.
struct AttentionTiling {
  int q_tile = 64;
  int kv_block = 64;
  int prefetch_bytes = 0;
};

// Decode tiling. A task is (kv head, chunk of context positions) and serves every query head of
// the kv head's group; the per-chunk partial (max, sum, accumulator) are merged in ascending chunk
// order. The context is cut as decode_chunks says. chunk changes the rounding of the result; the
// worker count does not.
// prefetch_bytes: as in AttentionTiling, ahead of each K row (scores) and V row (values).
struct DecodeTiling {
  int chunk = 256;
  int prefetch_bytes = 0;
};

// How decode cuts a context of `context` positions: chunks of `chunk` positions from the first,
// except that a remainder of at most chunk / 2 positions joins the last chunk (so the last holds
// up to chunk + chunk / 2). A chunk has a fixed cost (its softmax, value pass and merge): a third
// chunk of one key made a 513-position step 27% dearer than a 512-position one.
struct DecodeChunks {
  std::int64_t count = 0;    // chunks: chunk c starts at c * chunk
  std::int64_t longest = 0;  // positions in the longest (the last, or the only) chunk
  std::int64_t size(std::int64_t c, std::int64_t context, int chunk) const {
    return c + 1 < count ? chunk : context - (count - 1) * chunk;
  }
};
DecodeChunks decode_chunks(std::int64_t context, int chunk);

// float(1 / sqrt(head_dim)).
float default_attention_scale(int head_dim);

// Throw std::invalid_argument naming the bad field.
void validate(const AttentionTiling& tiling, const char* op);
void validate(const DecodeTiling& tiling, const char* op);

// Prefill: q, out are [tokens][n_q_heads][head_dim]; the queries are the LAST `tokens` positions
// of the cache, first_pos = cache.length() - tokens (append their K/V with kv_append first).
// scale <= 0 selects default_attention_scale(head_dim).
void attention_prefill(KernelPath path, const KvCache& cache, std::span<const float> q,
                       std::int64_t tokens, int n_q_heads, std::span<float> out, WorkerPool& pool,
                       const AttentionTiling& tiling = {}, float scale = 0.0f);

// Decode: one query per head at position cache.length() - 1 (append its K/V first);
// q, out are [n_q_heads][head_dim].
void attention_decode(KernelPath path, const KvCache& cache, std::span<const float> q,
                      int n_q_heads, std::span<float> out, WorkerPool& pool,
                      const DecodeTiling& tiling = {}, float scale = 0.0f);

}  // namespace k3k
