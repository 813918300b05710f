#include <algorithm>
#include <cmath>

#include "generic/op_checks.h"
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
  generic_detail::check_rmsnorm(x, weight, out, rows, dim, eps);
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
