// RVV SwiGLU: out = (g / (1 + exp(-g))) * up with the generic layer's operation sequence and
// element chunks (16384 per task), exp replaced by the vector exp of rvv_math.h (within 1 ulp,
// relative error <= 1.39 * 2^-24: inside the faithful-expf assumption of
// reference::swiglu_bound; overflow to +inf for g < -88.72 gives -0 like the generic layer).
// LMUL m4, the exp's: g, up and the exp temporaries stay within the register file. Elementwise,
// so results are bitwise identical for every worker count.
#include <algorithm>

#include "generic/op_checks.h"
#include "generic/vec_math.h"
#include "k3k/rvv.h"
#include "rvv/rvv_math.h"

namespace k3k::rvv {

using generic_detail::fail;

namespace {
constexpr std::int64_t kElementsPerTask = 16384;  // as the generic layer
}  // namespace

void swiglu(std::span<const float> gate, std::span<const float> up, std::span<float> out,
            std::int64_t rows, std::int64_t dim, WorkerPool& pool) {
  generic_detail::check_swiglu(gate, up, out, rows, dim);
  const std::int64_t n = rows * dim;
  const std::int64_t tasks = (n + kElementsPerTask - 1) / kElementsPerTask;
  pool.parallel_for(tasks, [&](std::int64_t task, int) {
    const std::int64_t begin = task * kElementsPerTask;
    const std::int64_t end = std::min(n, begin + kElementsPerTask);
    const float* gp = gate.data();
    const float* up_ = up.data();
    float* o = out.data();
    for (std::int64_t i = begin; i < end;) {
      const std::size_t vl = __riscv_vsetvl_e32m4(static_cast<std::size_t>(end - i));
      const vfloat32m4_t g = __riscv_vle32_v_f32m4(gp + i, vl);
      const vfloat32m4_t e = rvv_detail::vexp(__riscv_vfneg_v_f32m4(g, vl), vl);
      const vfloat32m4_t silu = __riscv_vfdiv_vv_f32m4(g, __riscv_vfadd_vf_f32m4(e, 1.0f, vl), vl);
      __riscv_vse32_v_f32m4(
          o + i, __riscv_vfmul_vv_f32m4(silu, __riscv_vle32_v_f32m4(up_ + i, vl), vl), vl);
      i += static_cast<std::int64_t>(vl);
    }
  });
}

}  // namespace k3k::rvv
