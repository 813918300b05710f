// The bytes one kernel call reads and writes, by source: the kernels' own accounting of what their
// algorithm moves (each byte counted once per pass the algorithm makes over it; a re-read that the
// algorithm arranges to come from a cache it keeps hot is not counted again), computed from the
// same arguments as the call. On a K3, decode is bound by memory, so these figures are its speed:
// weights + metadata + KV + state ("streamed") is what a decode token reads from DRAM, exactly.
//   linear (decode or prefill): the packed codes and (beta, scale) pairs once (N padded to whole
//     row tiles: the kernels read the padding), the activation pack once (codes, block sums, row
//     scales), the output written once, a bias and a residual read once;
//   quantize_pack: the float rows read, the pack written;
//   embedding: per token one row's codes and pairs (a table row: weights), the row written;
//   kv_append: K and V rows read, stored once each in the cache dtype;
//   attention decode and prefill: every visible cached key and value read once (a decode task
//     serves all query heads of its kv head; prefill's per-query-tile blocks come from caches it
//     keeps hot), queries read and outputs written;
//   Gated DeltaNet: the recurrent state read and written once per decode token, three times per
//     prefill chunk (read, read for the output, write); the convolution state read and written;
//   row-wise ops (norms, SwiGLU, residual add, gates): inputs and weights read, outputs written;
//   argmax: the logits read.
#pragma once

#include <cstdint>

#include "k3k/deltanet.h"
#include "k3k/kv_cache.h"
#include "k3k/linear.h"
#include "k3k/quantize.h"
#include "k3k/traffic_by_source.h"
#include "k3k/w4b64.h"

namespace k3k {

using Traffic = TrafficBySource<std::int64_t>;

// linear_prefill_w4b64 / linear_decode_w4b64 (without the activation quantisation).
Traffic linear_traffic(const PackedActivations& a, const W4B64Packed& w, const LinearEpilogue& ep);
// quantize_pack_prefill / quantize_pack_decode into `pack`.
Traffic quantize_pack_traffic(const PackedActivations& pack);
// embedding_lookup_w4b64 of `tokens` rows.
Traffic embedding_traffic(const W4B64Packed& table, std::int64_t tokens);
// kv_append / kv_append_one of `tokens` tokens into `cache`.
Traffic kv_append_traffic(const KvCache& cache, std::int64_t tokens);
// attention_decode / attention_prefill over `cache` as the call sees it (after the appends of
// its queries' tokens): `queries` query tokens of n_q_heads heads.
Traffic attention_traffic(const KvCache& cache, std::int64_t queries, int n_q_heads);
// gdn_decode (tokens == 1) / gdn_prefill in chunks of `chunk` tokens.
Traffic gdn_traffic(const GdnDims& dims, std::int64_t tokens, int chunk);
// causal_conv1d over `rows` tokens of `channels` with a kernel of `taps` (state: taps - 1 rows).
Traffic conv_traffic(std::int64_t rows, std::int64_t channels, int taps);
// A row-wise op over `elements` outputs that reads `inputs` arrays of the same size and `weights`
// floats of weights once (rmsnorm: 1 input and dim weights; swiglu, residual_add, sigmoid_gate:
// 2 inputs; gated_rmsnorm: 2 inputs and dim weights; l2norm: 1 input).
Traffic rowwise_traffic(std::int64_t elements, int inputs, std::int64_t weights = 0);
// argmax over `n` float logits.
Traffic argmax_traffic(std::int64_t n);

}  // namespace k3k
