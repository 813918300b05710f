#include <algorithm>

#include "generic/op_checks.h"
#include "k3k/small_ops.h"
#include "vec_math.h"

namespace k3k {

using generic_detail::fail;

namespace {
constexpr std::int64_t kElementsPerTask = 32768;
}  // namespace

namespace generic {
void residual_add(std::span<const float> a, std::span<const float> b, std::span<float> out,
                  std::int64_t rows, std::int64_t dim, WorkerPool& pool) {
  generic_detail::check_residual_add(a, b, out, rows, dim);
  const std::int64_t n = rows * dim;
  const std::int64_t tasks = (n + kElementsPerTask - 1) / kElementsPerTask;
  pool.parallel_for(tasks, [&](std::int64_t task, int) {
    const std::int64_t begin = task * kElementsPerTask;
    const std::int64_t end = std::min(n, begin + kElementsPerTask);
    const float* pa = a.data();
    const float* pb = b.data();
    float* po = out.data();
    for (std::int64_t i = begin; i < end; ++i) po[i] = pa[i] + pb[i];
  });
}
}  // namespace generic

}  // namespace k3k
