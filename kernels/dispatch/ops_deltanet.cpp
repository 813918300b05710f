// The dispatched Gated DeltaNet ops and the attention output gate: each hands its driver the
// chosen layer's microkernels (the only switch over layers is dispatch/layers.cpp).
#include "dispatch/layers.h"
#include "drivers/drivers.h"
#include "k3k/deltanet.h"

namespace k3k {

using dispatch::usable_kernels;

void gdn_prefill(KernelPath path, const GdnDims& dims, std::int64_t tokens, const GdnInputs& in,
                 std::span<float> state, std::span<float> out, WorkerPool& pool,
                 const GdnPrefillTiling& tiling) {
  driver::gdn_prefill(usable_kernels(path, "gdn_prefill").gated_deltanet, dims, tokens, in, state,
                      out, pool, tiling);
}

void gdn_decode(KernelPath path, const GdnDims& dims, const GdnInputs& in, std::span<float> state,
                std::span<float> out, WorkerPool& pool, const GdnDecodeTiling& tiling) {
  driver::gdn_decode(usable_kernels(path, "gdn_decode").gated_deltanet, dims, in, state, out, pool,
                     tiling);
}

void gdn_gates(KernelPath path, const float* a, std::int64_t a_stride, const float* b,
               std::int64_t b_stride, std::span<const float> a_log, std::span<const float> dt_bias,
               std::span<float> g, std::span<float> beta, std::int64_t tokens, int heads,
               WorkerPool& pool) {
  driver::gdn_gates(usable_kernels(path, "gdn_gates").gdn_gates, a, a_stride, b, b_stride, a_log,
                    dt_bias, g, beta, tokens, heads, pool);
}

void l2norm(KernelPath path, const float* x, std::int64_t x_stride, float* y,
            std::int64_t y_stride, std::int64_t tokens, int heads, int dim, float eps, float scale,
            WorkerPool& pool) {
  driver::l2norm(usable_kernels(path, "l2norm").l2norm, x, x_stride, y, y_stride, tokens, heads,
                 dim, eps, scale, pool);
}

void causal_conv1d(KernelPath path, std::span<const float> x, std::span<const float> weight,
                   std::span<float> state, std::span<float> y, std::int64_t tokens, int channels,
                   int kernel, WorkerPool& pool) {
  driver::causal_conv1d(usable_kernels(path, "causal_conv1d").causal_conv, x, weight, state, y,
                        tokens, channels, kernel, pool);
}

void gated_rmsnorm(KernelPath path, std::span<const float> x, std::span<const float> z,
                   std::span<const float> weight, std::span<float> y, std::int64_t rows, int dim,
                   float eps, WorkerPool& pool) {
  driver::gated_rmsnorm(usable_kernels(path, "gated_rmsnorm").gated_rmsnorm, x, z, weight, y, rows,
                        dim, eps, pool);
}

void sigmoid_gate(KernelPath path, std::span<const float> x, std::span<const float> gate,
                  std::span<float> out, WorkerPool& pool) {
  driver::sigmoid_gate(usable_kernels(path, "sigmoid_gate").sigmoid_gate, x, gate, out, pool);
}

}  // namespace k3k
