// Embedding-row lookup from a W4B64 table (tied embeddings: the same matrix as the LM head),
// dequantised to float: out[t][:] = s * (q - 8) + beta for the row of token t.
#pragma once

#include <cstdint>

#include "k3k/dispatch.h"
#include "k3k/w4b64.h"
#include "k3k/worker_pool.h"

namespace k3k {
// tokens: [T] ids in [0, table.n); out: [T][table.k]. The table may be in any packed layout (a tied
// table packed for the lm_head: kIme2 or kSignedRows too).
void embedding_lookup_w4b64(KernelPath path, const W4B64Packed& table, const std::int32_t* tokens,
                            std::int64_t count, float* out, WorkerPool& pool);
}  // namespace k3k
