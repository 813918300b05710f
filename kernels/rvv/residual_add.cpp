// RVV residual add: out = a + b with the generic layer's element chunks (32768 per task) and
// checks; one vfadd per e32m8 strip (LMUL m8: a purely streaming loop, a and b are 16 registers,
// fewest vsetvl per element). One correctly rounded addition per element, as in the generic layer,
// so the results are bitwise identical to it and across worker counts.
#include <riscv_vector.h>

#include <algorithm>

#include "generic/op_checks.h"
#include "generic/vec_math.h"
#include "k3k/rvv.h"

namespace k3k::rvv {

using generic_detail::fail;

namespace {
constexpr std::int64_t kElementsPerTask = 32768;  // as the generic layer
}  // namespace

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
    for (std::int64_t i = begin; i < end;) {
      const std::size_t vl = __riscv_vsetvl_e32m8(static_cast<std::size_t>(end - i));
      __riscv_vse32_v_f32m8(po + i,
                            __riscv_vfadd_vv_f32m8(__riscv_vle32_v_f32m8(pa + i, vl),
                                                   __riscv_vle32_v_f32m8(pb + i, vl), vl),
                            vl);
      i += static_cast<std::int64_t>(vl);
    }
  });
}

}  // namespace k3k::rvv
