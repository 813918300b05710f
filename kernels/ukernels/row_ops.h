// Microkernel contracts of the row-wise small ops (drivers/row_ops.cpp): the drivers own the
// checks, the split into rows or element chunks and the threading.
#pragma once

#include <cstdint>

namespace k3k::ukernel {

struct Rmsnorm {
  const char* name;  // e.g. "rmsnorm-f32-rvv"
  // y = x / sqrt(mean(x^2) + eps) * w over one row of dim (y may be x).
  void (*row)(const float* x, const float* w, float* y, int dim, float eps);
};

// out[i] = f(a[i], b[i]) for i < n (out may be a or b).
using ElementwiseFn = void (*)(const float* a, const float* b, float* out, std::int64_t n);

struct Swiglu {
  const char* name;     // e.g. "swiglu-f32-rvv"
  ElementwiseFn range;  // out = silu(gate) * up
};

struct ResidualAdd {
  const char* name;     // e.g. "residual_add-f32-rvv"
  ElementwiseFn range;  // out = a + b
};

struct Argmax {
  const char* name;  // e.g. "argmax-f32-rvv"
  // The first index of the largest of x[0..n) that is not NaN (ties: the smallest index; -0 and
  // +0 tie); -1 when every value is NaN.
  std::int64_t (*range)(const float* x, std::int64_t n);
};

}  // namespace k3k::ukernel
