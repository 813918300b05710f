#include <algorithm>

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
  if (rows < 0) fail("residual_add: rows (", rows, ") is negative");
  if (dim <= 0) fail("residual_add: dim (", dim, ") must be positive");
  const std::int64_t n = rows * dim;
  if (static_cast<std::int64_t>(a.size()) != n) {
    fail("residual_add: a.size() (", a.size(), ") != rows * dim (", n, ")");
  }
  if (static_cast<std::int64_t>(b.size()) != n) {
    fail("residual_add: b.size() (", b.size(), ") != rows * dim (", n, ")");
  }
  if (static_cast<std::int64_t>(out.size()) != n) {
    fail("residual_add: out.size() (", out.size(), ") != rows * dim (", n, ")");
  }
  if (generic_detail::partially_overlap(a.data(), a.size(), out.data(), out.size())) {
    fail("residual_add: out partially overlaps a");
  }
  if (generic_detail::partially_overlap(b.data(), b.size(), out.data(), out.size())) {
    fail("residual_add: out partially overlaps b");
  }
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
