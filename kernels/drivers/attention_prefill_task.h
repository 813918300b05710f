// One task of the prefill attention drivers (drivers/attention_prefill.cpp: DRAM scratch;
// drivers/attention_prefill_tcm.cpp: each worker's TCM block): query head x tile of q_tile rows,
// keys walked in kv_block blocks aligned at cache.first_visible(), K/V gathered a stage of
// stage_rows positions (a whole number of kv_blocks) at a time, K transposed into blocks of
// kv_block keys like the cache's key blocks (k3k/kv_cache.h), V as rows. Both drivers run this
// code, so their outputs are bitwise identical: only the arena's address differs.
#pragma once

#include <cstdint>
#include <span>

#include "k3k/attention.h"
#include "k3k/kv_cache.h"
#include "k3k/rope.h"
#include "ukernels/attention.h"

namespace k3k::driver::detail {

// What every task of one call shares.
struct PrefillCall {
  const ukernel::AttentionPrefill* uk;
  const KvCache* cache;
  const float* q;  // [tokens][n_q_heads][head_dim], unrotated
  float* out;      // likewise
  std::int64_t tokens;
  int n_q_heads, head_dim, group, q_tile, kv_block;
  float scale;
  std::int64_t first_pos;  // position of query row 0
  std::int64_t lo;         // cache.first_visible()
  std::int64_t n_tiles;
  const RopeTable* table;
  int prefetch_bytes;  // Zicbop prefetch.r distance ahead of the K/V rows, 0 = off
};

// The argument checks of attention_prefill (throw std::invalid_argument naming the field).
void check_prefill_args(const KvCache& cache, std::span<const float> q, std::int64_t tokens,
                        int n_q_heads, std::span<float> out, const AttentionTiling& tiling,
                        float scale);
// The call's shared state for checked arguments and tokens >= 1 (drivers/attention_prefill.cpp).
PrefillCall prefill_call(const ukernel::AttentionPrefill& uk, const KvCache& cache,
                         std::span<const float> q, std::int64_t tokens, int n_q_heads,
                         std::span<float> out, const AttentionTiling& tiling, float scale,
                         const RopeTable& table);

// One worker's working set, in floats (offsets in PrefillArenaLayout).
struct PrefillArena {
  float* qs;         // [q_tile][head_dim] rotated, scaled queries
  float* acc;        // [q_tile][head_dim] unnormalised outputs
  float* blk;        // [head_dim] block sum (layers that keep it in memory)
  float* m;          // [q_tile] running max
  float* l;          // [q_tile] running sum
  float* s;          // [2][kv_block] scores (a pair of rows)
  float* kbuf;       // [stage_rows / kv_block][head_dim][kv_block] staged K (ukernel::KeysT blocks)
  float* vbuf;       // [stage_rows][head_dim] staged V (null: V rows read in place)
  const float** vp;  // [kv_block] V row pointers handed to the microkernel
  int stage_rows;    // positions gathered per stage, a multiple of kv_block
  bool staged;       // every stage copied (TCM, fp16); else an fp32 cache read in place, K staged
                     // only for a block that wraps around a ring cache
};

// Float offsets of an arena's regions, each rounded up to 16 floats (64 bytes).
struct PrefillArenaLayout {
  std::int64_t acc, blk, m, l, s, kbuf, vbuf, floats;
};
PrefillArenaLayout prefill_arena_layout(int head_dim, int q_tile, int kv_block, int stage_rows,
                                        bool staged);
// row_pointers: kv_block pointers of scratch (V rows).
PrefillArena prefill_arena(float* base, const PrefillArenaLayout& layout, int stage_rows,
                           bool staged, const float** row_pointers);

// Runs task `task` (tiles in longest-first order, see the driver); returns the K/V bytes staged.
std::int64_t run_prefill_task(const PrefillCall& call, std::int64_t task, const PrefillArena& a);

}  // namespace k3k::driver::detail
