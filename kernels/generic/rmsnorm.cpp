#include <algorithm>
#include <cmath>

#include "k3k/small_ops.h"
#include "vec_math.h"

namespace k3k {

using generic_detail::fail;

namespace {
constexpr std::int64_t kElementsPerTask = 16384;  // rows are grouped so a task is ~64 KiB of input
}  // namespace

namespace generic {
void rmsnorm(std::span<const float> x, std::span<const float> weight, std::span<float> out,
             std::int64_t rows, int dim, float eps, WorkerPool& pool) {
  if (rows < 0) fail("rmsnorm: rows (", rows, ") is negative");
  if (dim <= 0) fail("rmsnorm: dim (", dim, ") must be positive");
  if (!(eps >= 0.0f) || !std::isfinite(eps))
    fail("rmsnorm: eps (", eps, ") must be finite and >= 0");
  const std::int64_t n = rows * dim;
  if (static_cast<std::int64_t>(x.size()) != n) {
    fail("rmsnorm: x.size() (", x.size(), ") != rows * dim (", n, ")");
  }
  if (static_cast<std::int64_t>(out.size()) != n) {
    fail("rmsnorm: out.size() (", out.size(), ") != rows * dim (", n, ")");
  }
  if (static_cast<std::int64_t>(weight.size()) != dim) {
    fail("rmsnorm: weight.size() (", weight.size(), ") != dim (", dim, ")");
  }
  if (generic_detail::partially_overlap(x.data(), x.size(), out.data(), out.size()))
    fail("rmsnorm: out partially overlaps x");
  const std::int64_t rows_per_task = std::max<std::int64_t>(1, kElementsPerTask / dim);
  const std::int64_t tasks = (rows + rows_per_task - 1) / rows_per_task;
  const float fdim = static_cast<float>(dim);  // exact for dim < 2^24
  pool.parallel_for(tasks, [&](std::int64_t task, int) {
    const std::int64_t r_end = std::min(rows, (task + 1) * rows_per_task);
    const float* w = weight.data();
    for (std::int64_t r = task * rows_per_task; r < r_end; ++r) {
      const float* xr = x.data() + r * dim;
      float* yr = out.data() + r * dim;
      const float ss = generic_detail::dot_lanes(xr, xr, dim);
      const float inv = 1.0f / std::sqrt(ss / fdim + eps);
      for (int i = 0; i < dim; ++i) yr[i] = (xr[i] * inv) * w[i];
    }
  });
}
}  // namespace generic

}  // namespace k3k
