#include "common/op_checks.h"

#include <cmath>

#include "common/checks.h"

namespace k3k::detail {

namespace {
void check_rows_dim(const char* op, std::int64_t rows, std::int64_t dim) {
  if (rows < 0) fail(op, ": rows (", rows, ") is negative");
  if (dim <= 0) fail(op, ": dim (", dim, ") must be positive");
}
void check_size(const char* op, const char* name, std::size_t size, std::int64_t n) {
  if (static_cast<std::int64_t>(size) != n) fail(op, ": ", name, ".size() (", size, ") != rows * dim (", n, ")");
}
void check_no_partial_overlap(const char* op, const char* name, std::span<const float> in,
                              std::span<const float> out) {
  if (partially_overlap(in.data(), in.size(), out.data(), out.size())) fail(op, ": out partially overlaps ", name);
}
// out = f(x, y) elementwise over rows x dim: three spans of rows * dim, out in place of x or y or
// apart from both.
void check_elementwise_pair(const char* op, const char* x_name, std::span<const float> x,
                            const char* y_name, std::span<const float> y,
                            std::span<const float> out, std::int64_t rows, std::int64_t dim) {
  check_rows_dim(op, rows, dim);
  const std::int64_t n = rows * dim;
  check_size(op, x_name, x.size(), n);
  check_size(op, y_name, y.size(), n);
  check_size(op, "out", out.size(), n);
  check_no_partial_overlap(op, x_name, x, out);
  check_no_partial_overlap(op, y_name, y, out);
}
}  // namespace

void check_residual_add(std::span<const float> a, std::span<const float> b, std::span<const float> out,
                        std::int64_t rows, std::int64_t dim) {
  check_elementwise_pair("residual_add", "a", a, "b", b, out, rows, dim);
}

void check_embedding(const char* who, const W4B64Packed& table, const std::int32_t* tokens,
                     std::int64_t count) {
  for (std::int64_t t = 0; t < count; ++t) {
    if (tokens[t] < 0 || tokens[t] >= table.n) {
      fail(who, ": token id ", tokens[t], " at index ", t, " is outside [0, ", table.n, ")");
    }
  }
}

void check_swiglu(std::span<const float> gate, std::span<const float> up, std::span<const float> out,
                  std::int64_t rows, std::int64_t dim) {
  check_elementwise_pair("swiglu", "gate", gate, "up", up, out, rows, dim);
}

void check_rmsnorm(std::span<const float> x, std::span<const float> weight, std::span<const float> out,
                   std::int64_t rows, int dim, float eps) {
  check_rows_dim("rmsnorm", rows, dim);
  if (!(eps >= 0.0f) || !std::isfinite(eps)) fail("rmsnorm: eps (", eps, ") must be finite and >= 0");
  const std::int64_t n = rows * dim;
  check_size("rmsnorm", "x", x.size(), n);
  check_size("rmsnorm", "out", out.size(), n);
  if (static_cast<std::int64_t>(weight.size()) != dim) {
    fail("rmsnorm: weight.size() (", weight.size(), ") != dim (", dim, ")");
  }
  check_no_partial_overlap("rmsnorm", "x", x, out);
}

void check_kv_append(const KvCache& cache, std::size_t k_size, std::size_t v_size, std::int64_t tokens,
                     const char* op) {
  if (tokens < 0) fail(op, ": tokens (", tokens, ") is negative");
  const std::int64_t row = static_cast<std::int64_t>(cache.n_kv_heads()) * cache.head_dim();
  if (static_cast<std::int64_t>(k_size) != tokens * row) {
    fail(op, ": k.size() (", k_size, ") != tokens * n_kv_heads * head_dim (", tokens * row, ")");
  }
  if (static_cast<std::int64_t>(v_size) != tokens * row) {
    fail(op, ": v.size() (", v_size, ") != tokens * n_kv_heads * head_dim (", tokens * row, ")");
  }
  if (cache.ring()) {
    if (tokens > cache.capacity()) {
      fail(op, ": tokens (", tokens, ") exceeds the capacity (", cache.capacity(),
           ") of a ring cache (append at most capacity tokens at a time)");
    }
  } else if (cache.length() + tokens > cache.capacity()) {
    fail(op, ": length (", cache.length(), ") + tokens (", tokens, ") exceeds the capacity (",
         cache.capacity(), ") of a contiguous cache");
  }
}

}  // namespace k3k::detail
