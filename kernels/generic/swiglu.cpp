#include <algorithm>
#include <cmath>

#include "generic/op_checks.h"
#include "k3k/small_ops.h"
#include "vec_math.h"

namespace k3k {

using generic_detail::fail;

namespace {
constexpr std::int64_t kElementsPerTask = 16384;
}  // namespace

namespace generic {
void swiglu(std::span<const float> gate, std::span<const float> up, std::span<float> out,
            std::int64_t rows, std::int64_t dim, WorkerPool& pool) {
  generic_detail::check_swiglu(gate, up, out, rows, dim);
  const std::int64_t n = rows * dim;
  const std::int64_t tasks = (n + kElementsPerTask - 1) / kElementsPerTask;
  pool.parallel_for(tasks, [&](std::int64_t task, int) {
    const std::int64_t begin = task * kElementsPerTask;
    const std::int64_t end = std::min(n, begin + kElementsPerTask);
    const float* g = gate.data();
    const float* u = up.data();
    float* o = out.data();
    for (std::int64_t i = begin; i < end; ++i) {
      const float e = std::exp(-g[i]);  // +inf for g < ~-88.7: silu -> -0, error |silu| < 1e-36
      o[i] = (g[i] / (1.0f + e)) * u[i];
    }
  });
}
}  // namespace generic

}  // namespace k3k
