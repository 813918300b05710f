// Microkernel contracts of the attention drivers (drivers/attention_prefill.cpp,
// drivers/attention_decode.cpp). The drivers own the checks, the task decomposition (prefill:
// query head x q_tile rows, keys in kv_block blocks; decode: kv head x context chunk, merged per
// query head in ascending chunk order), the scratch layout and threading; a layer supplies the
// arithmetic, whose order fixes the rounding (see reference::*_error_model).
#pragma once

#include <cstdint>

#include "k3k/fp16.h"
#include "k3k/kv_cache.h"

namespace k3k::ukernel {

// Score rows of online_block's scratch: a layer may score up to this many query rows of a block
// before their softmax steps (the RVV layer shares each K load among 8 rows).
inline constexpr int kOnlineScoreRows = 8;

// n consecutive keys' K, transposed in key blocks the way the cache stores it (k3k/kv_cache.h): the
// keys of one block are columns, a dim's values of the block's keys contiguous. Key j is column
// (first + j) % block of block (first + j) / block; its component d is at col(j) + d * block.
// A stage buffer is the same with block = its keys per block and first = 0.
struct KeysT {
  const float* base;          // component 0 of column 0 of the first block
  std::int64_t block_stride;  // floats from one block to the next (block * head_dim when packed)
  int block;                  // columns per block: the stride between a key's components
  int first;                  // column of key 0 in the first block
  const float* col(int j) const {
    const int c = first + j;
    return base + (c / block) * block_stride + c % block;
  }
  // Keys j, j + 1, ... that share key j's block (their columns are contiguous).
  int run(int j) const { return block - (first + j) % block; }
};

// dst = rope(src) * scale for one head vector (cos, sin: the table row of its position; half =
// rotary_dim / 2).
using RotateScaleQFn = void (*)(const float* src, float* dst, int head_dim, int half,
                                const float* cos, const float* sin, float scale);

struct AttentionPrefill {
  const char* name;  // e.g. "attention_prefill-f32-online-rvv"
  RotateScaleQFn rotate_scale_q;
  // Exact fp16 -> fp32 of `rows` rows of n values (row r at src + r * src_stride, to dst + r *
  // dst_stride): V rows (one row of a run), a staged key block's dims (one row per dim).
  void (*f16_rows)(const fp16_t* src, std::ptrdiff_t src_stride, float* dst,
                   std::ptrdiff_t dst_stride, std::int64_t rows, std::int64_t n);
  // `rows` query rows of consecutive positions (row r at q + r * head_dim, rotated and scaled)
  // against one block of n keys k (transposed, KeysT) / values vp[j] (rows); row r sees the first
  // min(n, nv0 + r) keys (nv0 >= 1, causal). For each row, with its m[r], l[r] and accumulator
  // acc + r * head_dim (online softmax step): s_j = q.k_j; m' = max(m, max s); acc = acc *
  // exp(m - m') + sum_j exp(s_j - m') v_j; l likewise. A row whose m is -inf (no block yet) has
  // its acc taken as +0 without reading it (the caller need not zero it). A row's arithmetic does
  // not depend on the other rows (so not on q_tile). s: kOnlineScoreRows * n floats and blk:
  // head_dim floats of scratch.
  void (*online_block)(const float* q, int rows, int nv0, const KeysT& k, const float* const* vp,
                       int n, int head_dim, float* s, float* blk, float* m, float* l, float* acc);
  void (*divide_row)(const float* acc, float l, float* out, int head_dim);  // out = acc / l
};

// One decode task: the query heads of kv head `kv_head` against positions [first_pos, first_pos+n).
struct DecodeChunk {
  const KvCache* cache;
  int kv_head;
  std::int64_t first_pos;
  int n;
  int group;       // query heads per kv head
  const float* q;  // [group][head_dim], rotated and scaled
  float* scores;   // [group][score_stride] scratch
  int score_stride;
  float* kbuf;  // head_dim floats of scratch (a key gathered from its column)
  float* vbuf;  // head_dim floats of scratch (fp16 caches)
  float* m;     // chunk max of query head gi at m[gi * head_stride]
  float* l;     // chunk sum, likewise
  float* acc;   // unnormalised accumulator at acc[gi * head_stride * head_dim], head_dim
  std::int64_t head_stride;
  // Zicbop prefetch.r distance in bytes ahead of each K / V row read (0 = off; a hint the RVV
  // layer issues in Zicbop builds, never changing a result).
  int prefetch_bytes;
};

struct AttentionDecode {
  const char* name;  // e.g. "attention_decode-f32-chunked-rvv"
  RotateScaleQFn rotate_scale_q;
  void (*chunk)(const DecodeChunk& c);
  // out = merge of one query head's n_chunks partials (acc: [n_chunks][head_dim], m, l: [n_chunks])
  // in ascending chunk order, divided by the merged sum.
  void (*merge)(const float* acc, const float* m, const float* l, std::int64_t n_chunks,
                int head_dim, float* out);
};

}  // namespace k3k::ukernel
