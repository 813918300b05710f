// Embedding lookup: one task per token, the layer dequantises the row (its own packing too, so a
// tied table can be packed for the lm_head's layer).
#include <stdexcept>
#include <string>

#include "common/op_checks.h"
#include "drivers/drivers.h"

namespace k3k::driver {

void embedding_lookup(const ukernel::Embedding& uk, const W4B64Packed& table,
                      const std::int32_t* tokens, std::int64_t count, float* out,
                      WorkerPool& pool) {
  detail::check_embedding("embedding_lookup_w4b64", table, tokens, count);
  if (!uk.reads(table)) {
    throw std::invalid_argument(std::string("embedding_lookup_w4b64: ") + uk.name +
                                " does not read tables in the " + to_string(table.layout) +
                                " layout");
  }
  const std::int64_t k = table.k;
  pool.parallel_for(count, [&](std::int64_t t, int) { uk.row(table, tokens[t], out + t * k); });
}

}  // namespace k3k::driver
