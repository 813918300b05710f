// Prefill attention through TCM (the K3 fused attention layer of the fallback chain: K3 fused
// attention -> RVV attention -> generic). Each worker keeps its whole working set in its own TCM
// block: the rotated and scaled Q tile, the output accumulators, the running softmax state
// (max, sum per row), the block scores, and the K/V rows of the current stage (a stage is
// `kv_blocks` consecutive online-softmax blocks of kv_block positions, staged once and read by
// every row of the tile). A worker whose block is not handed over in time computes that call from
// DRAM scratch and the cache itself.
//
// Outputs are bitwise identical to k3k::attention_prefill on the same layer and tiling: the same
// microkernels run the same arithmetic in the same order on the same values; only the address the
// working set lives at differs. kv_blocks only sets how many blocks one copy stages; it never
// changes the rounding (kv_block does, as in the DRAM driver).
//
// Per-worker TCM layout (floats, each region rounded up to 16 floats = 64 bytes):
//   Q tile [q_tile][head_dim] | acc [q_tile][head_dim] | block sum [head_dim] | m [q_tile] |
//   l [q_tile] | scores [2][kv_block] | K stage [kv_blocks][head_dim][kv_block] |
//   V stage [kv_blocks * kv_block][head_dim]
// (each online-softmax block's keys staged transposed, as the cache's key blocks are:
// k3k/kv_cache.h)
// with q_tile = min(tiling.q_tile, tokens). K and V are fp32 in TCM for both cache dtypes (fp16
// values are converted while staging, as the DRAM driver converts them into its scratch).
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "k3k/attention.h"
#include "k3k/tcm_linear.h"

namespace k3k {

struct TcmAttentionParams {
  TcmUse use = TcmUse::kAuto;  // on: skip the size threshold and accept emulated blocks
  // kv_block-position blocks staged per copy; 0: as many as fit the block (at most the context).
  int kv_blocks = 0;
  std::int64_t ctx_min = 1024;  // auto: contexts shorter than this stay in DRAM (they fit in L2)
  bool table_disables = false;  // a loaded tuning table turned TCM off for this shape
  bool auto_allows_emulated = false;
  std::int64_t acquire_timeout_us = 1000;  // per call, per worker; not handed over -> DRAM
};

struct TcmAttentionGate {
  bool use_tcm = false;
  std::string reason;
  int kv_blocks = 0;  // blocks staged per copy
};

struct TcmAttentionStats {
  std::int64_t bytes_staged = 0;  // K/V bytes written into TCM (fp32), summed over workers
  int workers_with_block = 0;
  int workers_without_block = 0;  // acquire timed out or no block: those computed from DRAM
};

// Bytes of one worker's TCM working set (the layout above) for `rows` query rows per tile.
std::int64_t tcm_attention_bytes(int head_dim, int rows, int kv_block, int kv_blocks);

// All must hold: the parameters allow it, a TCM backend, real blocks and context >= ctx_min
// (these two unless use == on), the working set of one stage fits a block, and >= 1 usable block.
TcmAttentionGate decide_tcm_attention_prefill(const KvCache& cache, std::int64_t tokens,
                                              const AttentionTiling& tiling,
                                              const TcmWorkspace* workspace,
                                              const TcmAttentionParams& params);

struct AttentionPrefillOptions {
  TcmWorkspace* tcm_workspace = nullptr;           // null: the DRAM driver
  const TcmAttentionParams* tcm_params = nullptr;  // null: TcmAttentionParams{}
  const TcmAttentionGate* tcm_gate = nullptr;      // decided once per shape; null: in this call
  TcmAttentionStats* tcm_stats = nullptr;          // zero after a DRAM call
};

// attention_prefill (k3k/attention.h) taking the TCM driver when a workspace is given and the
// gate allows it.
void attention_prefill(KernelPath path, const KvCache& cache, std::span<const float> q,
                       std::int64_t tokens, int n_q_heads, std::span<float> out, WorkerPool& pool,
                       const AttentionTiling& tiling, float scale,
                       const AttentionPrefillOptions& options);

}  // namespace k3k
