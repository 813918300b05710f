// Embedding lookup: one task per token, the layer dequantises the row.
#include "common/op_checks.h"
#include "drivers/drivers.h"

namespace k3k::driver {

void embedding_lookup(const ukernel::Embedding& uk, const W4B64Packed& table,
                      const std::int32_t* tokens, std::int64_t count, float* out,
                      WorkerPool& pool) {
  // Includes the layout check: kIme2 tables are not row-readable.
  detail::check_embedding("embedding_lookup_w4b64", table, tokens, count);
  const std::int64_t k = table.k;
  pool.parallel_for(count, [&](std::int64_t t, int) { uk.row(table, tokens[t], out + t * k); });
}

}  // namespace k3k::driver
