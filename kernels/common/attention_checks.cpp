// Attention tiling checks and the default score scale (k3k/attention.h).
#include <cmath>

#include "common/attention_checks.h"
#include "k3k/attention.h"

namespace k3k {

using detail::fail;

float default_attention_scale(int head_dim) {
  return static_cast<float>(1.0 / std::sqrt(static_cast<double>(head_dim)));
}

void validate(const AttentionTiling& tiling, const char* op) {
  if (tiling.q_tile < 1 || tiling.q_tile > 4096) {
    fail(op, ": tiling.q_tile (", tiling.q_tile, ") must be in [1, 4096]");
  }
  if (tiling.kv_block < 1 || tiling.kv_block > 65536) {
    fail(op, ": tiling.kv_block (", tiling.kv_block, ") must be in [1, 65536]");
  }
  if (tiling.prefetch_bytes < 0 || tiling.prefetch_bytes > 1 << 20) {
    fail(op, ": tiling.prefetch_bytes (", tiling.prefetch_bytes, ") must be in [0, 1048576]");
  }
}

DecodeChunks decode_chunks(std::int64_t context, int chunk) {
  if (context < 1 || chunk < 1) return {};
  const std::int64_t full = context / chunk, rest = context % chunk;
  if (full == 0) return {1, context};
  if (rest == 0) return {full, chunk};
  if (rest <= chunk / 2) return {full, chunk + rest};
  return {full + 1, chunk};
}

void validate(const DecodeTiling& tiling, const char* op) {
  if (tiling.chunk < 1 || tiling.chunk > 1 << 20) {
    fail(op, ": tiling.chunk (", tiling.chunk, ") must be in [1, 1048576]");
  }
  if (tiling.prefetch_bytes < 0 || tiling.prefetch_bytes > 1 << 20) {
    fail(op, ": tiling.prefetch_bytes (", tiling.prefetch_bytes, ") must be in [0, 1048576]");
  }
}

}  // namespace k3k
