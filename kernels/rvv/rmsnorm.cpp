// RVV RMSNorm: the generic layer's row grouping (~16384 elements per task) and argument checks;
// per row the sum of squares is the shared RVV reduction (rvv_math.h dot: e32m4 vfmacc lanes, fold
// to m1, one vfredusum; reference::rvv_dot_depth(dim, vlenb) roundings per term, the sum_depth to
// pass to reference::rmsnorm_bound), the scalar 1/sqrt(ss/dim + eps) is the generic expression, and
// y = fl(fl(x * inv) * w) is two e32m8 vfmul per strip (LMUL m8: x, w and y are 24 registers in a
// purely streaming loop). Only the sum of squares' order differs from the generic layer. Rows are
// independent, so results are bitwise identical for every worker count.
#include <algorithm>
#include <cmath>

#include "generic/op_checks.h"
#include "generic/vec_math.h"
#include "k3k/rvv.h"
#include "rvv/rvv_math.h"

namespace k3k::rvv {

using generic_detail::fail;

namespace {
constexpr std::int64_t kElementsPerTask = 16384;  // as the generic layer
}  // namespace

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
      const float ss = rvv_detail::dot(xr, xr, dim);
      const float inv = 1.0f / std::sqrt(ss / fdim + eps);
      for (int i = 0; i < dim;) {
        const std::size_t vl = __riscv_vsetvl_e32m8(static_cast<std::size_t>(dim - i));
        const vfloat32m8_t xi = __riscv_vfmul_vf_f32m8(__riscv_vle32_v_f32m8(xr + i, vl), inv, vl);
        __riscv_vse32_v_f32m8(yr + i,
                              __riscv_vfmul_vv_f32m8(xi, __riscv_vle32_v_f32m8(w + i, vl), vl), vl);
        i += static_cast<int>(vl);
      }
    }
  });
}

}  // namespace k3k::rvv
