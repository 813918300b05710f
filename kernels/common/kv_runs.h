// Walks of consecutive positions of one kv head in a KvCache (k3k/kv_cache.h): split where a ring
// cache wraps (runs: consecutive slots, contiguous V rows) and, for K, also where a key block ends
// (pieces: columns contiguous in every dim's row of the block).
#pragma once

#include <algorithm>
#include <cstdint>

#include "k3k/kv_cache.h"

namespace k3k::detail {

// fn(i, slot, run) for positions [p0 + i, p0 + i + run) of [p0, p0 + n), slots slot.. slot + run.
template <typename Fn>
void for_each_slot_run(const KvCache& cache, std::int64_t p0, std::int64_t n, Fn&& fn) {
  for (std::int64_t i = 0; i < n;) {
    const std::int64_t slot = cache.slot(p0 + i);
    const std::int64_t run = std::min(n - i, cache.capacity() - slot);
    fn(i, slot, run);
    i += run;
  }
}

// fn(i, slot, piece): as for_each_slot_run, each run further split at key-block boundaries.
template <typename Fn>
void for_each_key_piece(const KvCache& cache, std::int64_t p0, std::int64_t n, Fn&& fn) {
  const std::int64_t kb = cache.key_block();
  for_each_slot_run(cache, p0, n, [&](std::int64_t i0, std::int64_t slot0, std::int64_t run) {
    for (std::int64_t i = 0; i < run;) {
      const std::int64_t piece = std::min(run - i, kb - (slot0 + i) % kb);
      fn(i0 + i, slot0 + i, piece);
      i += piece;
    }
  });
}

}  // namespace k3k::detail
