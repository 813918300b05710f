// Row-wise small ops: RMSNorm groups rows so a task is ~64 KiB of input; SwiGLU and the residual
// add split the elements into fixed chunks. Every task owns disjoint outputs, so results are
// bitwise identical for any worker count.
#include <algorithm>
#include <stdexcept>

#include "common/op_checks.h"
#include "drivers/drivers.h"

namespace k3k::driver {

namespace {

constexpr std::int64_t kRmsnormElementsPerTask = 16384;
constexpr std::int64_t kSwigluElementsPerTask = 16384;
constexpr std::int64_t kAddElementsPerTask = 32768;

void elementwise(ukernel::ElementwiseFn fn, std::span<const float> a, std::span<const float> b,
                 std::span<float> out, std::int64_t n, std::int64_t per_task, WorkerPool& pool) {
  const std::int64_t tasks = (n + per_task - 1) / per_task;
  pool.parallel_for(tasks, [&](std::int64_t task, int) {
    const std::int64_t begin = task * per_task;
    fn(a.data() + begin, b.data() + begin, out.data() + begin,
       std::min(n, begin + per_task) - begin);
  });
}

}  // namespace

void rmsnorm(const ukernel::Rmsnorm& uk, std::span<const float> x, std::span<const float> weight,
             std::span<float> out, std::int64_t rows, int dim, float eps, WorkerPool& pool) {
  detail::check_rmsnorm(x, weight, out, rows, dim, eps);
  const std::int64_t rows_per_task = std::max<std::int64_t>(1, kRmsnormElementsPerTask / dim);
  const std::int64_t tasks = (rows + rows_per_task - 1) / rows_per_task;
  pool.parallel_for(tasks, [&](std::int64_t task, int) {
    const std::int64_t r_end = std::min(rows, (task + 1) * rows_per_task);
    for (std::int64_t r = task * rows_per_task; r < r_end; ++r) {
      uk.row(x.data() + r * dim, weight.data(), out.data() + r * dim, dim, eps);
    }
  });
}

void swiglu(const ukernel::Swiglu& uk, std::span<const float> gate, std::span<const float> up,
            std::span<float> out, std::int64_t rows, std::int64_t dim, WorkerPool& pool) {
  detail::check_swiglu(gate, up, out, rows, dim);
  elementwise(uk.range, gate, up, out, rows * dim, kSwigluElementsPerTask, pool);
}

std::int64_t argmax(const ukernel::Argmax& uk, std::span<const float> x) {
  if (x.empty()) throw std::invalid_argument("argmax: x is empty");
  return std::max<std::int64_t>(0, uk.range(x.data(), static_cast<std::int64_t>(x.size())));
}

void residual_add(const ukernel::ResidualAdd& uk, std::span<const float> a,
                  std::span<const float> b, std::span<float> out, std::int64_t rows,
                  std::int64_t dim, WorkerPool& pool) {
  detail::check_residual_add(a, b, out, rows, dim);
  elementwise(uk.range, a, b, out, rows * dim, kAddElementsPerTask, pool);
}

}  // namespace k3k::driver
