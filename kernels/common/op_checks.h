// Argument checks of the small-op, embedding and KV-append drivers. Each throws
// std::invalid_argument naming the op and the field.
#pragma once

#include <cstdint>
#include <span>

#include "k3k/kv_cache.h"
#include "k3k/w4b64.h"

namespace k3k::detail {

void check_residual_add(std::span<const float> a, std::span<const float> b,
                        std::span<const float> out, std::int64_t rows, std::int64_t dim);
void check_swiglu(std::span<const float> gate, std::span<const float> up,
                  std::span<const float> out, std::int64_t rows, std::int64_t dim);
void check_rmsnorm(std::span<const float> x, std::span<const float> weight,
                   std::span<const float> out, std::int64_t rows, int dim, float eps);
// who: the kernel's name (message prefix). The table must be kRowTile32 and every token in [0, N).
void check_embedding(const char* who, const W4B64Packed& table, const std::int32_t* tokens,
                     std::int64_t count);
// op: "kv_append" or "kv_append_one" (message prefix).
void check_kv_append(const KvCache& cache, std::size_t k_size, std::size_t v_size,
                     std::int64_t tokens, const char* op);

}  // namespace k3k::detail
