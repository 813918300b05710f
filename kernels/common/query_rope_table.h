// The RoPE table the attention drivers rotate Q with: the cache's last-append table when it covers
// the query positions (KvCache::append_rope_table: built by the append for K, bitwise the table
// this would build), else a new one.
#pragma once

#include <cstdint>
#include <optional>

#include "k3k/kv_cache.h"
#include "k3k/rope.h"
#include "k3k/worker_pool.h"

namespace k3k::detail {

// Positions [first_pos, first_pos + count): the kept table, or one built into `own` (in parallel
// over `pool` when given).
inline const RopeTable& query_rope_table(const KvCache& cache, std::int64_t first_pos,
                                         std::int64_t count, WorkerPool* pool,
                                         std::optional<RopeTable>& own) {
  const RopeTable* kept = cache.append_rope_table();
  if (kept != nullptr && kept->first_pos() <= first_pos &&
      first_pos + count <= kept->first_pos() + kept->count()) {
    return *kept;
  }
  if (pool != nullptr) {
    own.emplace(cache.rope(), first_pos, count, *pool);
  } else {
    own.emplace(cache.rope(), first_pos, count);
  }
  return *own;
}

}  // namespace k3k::detail
