// Drivers of the Gated DeltaNet row-wise ops and the attention output gate: gates and norms split
// rows (tokens or token x head rows), the convolution splits channels (each task runs all tokens
// of its channels, then rolls their state), the gate splits elements. Every task owns disjoint
// outputs: bitwise identical for any worker count.
#include <algorithm>
#include <cmath>
#include <span>

#include "common/deltanet_checks.h"
#include "drivers/drivers.h"
#include "k3k/aligned_buffer.h"

namespace k3k::driver {
namespace {

constexpr std::int64_t kElementsPerTask = 16384;
constexpr std::int64_t kConvChannelsPerTask = 256;

}  // namespace

void gdn_gates(const ukernel::GdnGates& uk, const float* a, std::int64_t a_stride, const float* b,
               std::int64_t b_stride, std::span<const float> a_log, std::span<const float> dt_bias,
               std::span<float> g, std::span<float> beta, std::int64_t tokens, int heads,
               WorkerPool& pool) {
  detail::check_gdn_gates(a, a_stride, b, b_stride, a_log, dt_bias, g, beta, tokens, heads);
  // -exp(A_log) once per head, in double and rounded once: the same bits on every layer.
  thread_local AlignedBuffer<float> neg_a_buffer;  // kept between calls: no allocation per call
  const std::span<float> neg_a =
      reused_for_overwrite(neg_a_buffer, static_cast<std::size_t>(heads));
  for (int h = 0; h < heads; ++h)
    neg_a[static_cast<std::size_t>(h)] =
        static_cast<float>(-std::exp(static_cast<double>(a_log[static_cast<std::size_t>(h)])));
  const std::int64_t per_task = std::max<std::int64_t>(1, kElementsPerTask / heads);
  const std::int64_t tasks = (tokens + per_task - 1) / per_task;
  pool.parallel_for(tasks, [&](std::int64_t task, int) {
    const std::int64_t end = std::min(tokens, (task + 1) * per_task);
    for (std::int64_t t = task * per_task; t < end; ++t) {
      uk.row(a + t * a_stride, b + t * b_stride, neg_a.data(), dt_bias.data(), g.data() + t * heads,
             beta.data() + t * heads, heads);
    }
  });
}

void l2norm(const ukernel::L2Norm& uk, const float* x, std::int64_t x_stride, float* y,
            std::int64_t y_stride, std::int64_t tokens, int heads, int dim, float eps, float scale,
            WorkerPool& pool) {
  detail::check_l2norm(x, x_stride, y, y_stride, tokens, heads, dim, eps, scale);
  const std::int64_t rows = tokens * heads;
  const std::int64_t per_task = std::max<std::int64_t>(1, kElementsPerTask / dim);
  const std::int64_t tasks = (rows + per_task - 1) / per_task;
  pool.parallel_for(tasks, [&](std::int64_t task, int) {
    const std::int64_t end = std::min(rows, (task + 1) * per_task);
    for (std::int64_t r = task * per_task; r < end; ++r) {
      const std::int64_t t = r / heads, h = r % heads;
      uk.row(x + t * x_stride + h * dim, y + t * y_stride + h * dim, dim, eps, scale);
    }
  });
}

void causal_conv1d(const ukernel::CausalConv& uk, std::span<const float> x,
                   std::span<const float> weight, std::span<float> state, std::span<float> y,
                   std::int64_t tokens, int channels, int kernel, WorkerPool& pool) {
  detail::check_causal_conv1d(x, weight, state, y, tokens, channels, kernel);
  if (tokens == 0) return;
  const int hist = kernel - 1;
  const std::int64_t tasks = (channels + kConvChannelsPerTask - 1) / kConvChannelsPerTask;
  pool.parallel_for(tasks, [&](std::int64_t task, int) {
    const std::int64_t c0 = task * kConvChannelsPerTask;
    const std::int64_t n = std::min<std::int64_t>(kConvChannelsPerTask, channels - c0);
    uk.block(x.data() + c0, state.data() + c0, weight.data() + c0, y.data() + c0, tokens, kernel,
             channels, n);
    // Roll this block's state: the last `hist` inputs of [state; x], oldest first.
    for (int p = 0; p < hist; ++p) {
      const std::int64_t pos = tokens + p;  // position in [state; x]
      float* dst = state.data() + std::int64_t(p) * channels + c0;
      const float* src =
          pos < hist ? state.data() + pos * channels + c0 : x.data() + (pos - hist) * channels + c0;
      std::copy(src, src + n, dst);  // src is a later row than dst (or x): never overwritten yet
    }
  });
}

void gated_rmsnorm(const ukernel::GatedRmsnorm& uk, std::span<const float> x,
                   std::span<const float> z, std::span<const float> weight, std::span<float> y,
                   std::int64_t rows, int dim, float eps, WorkerPool& pool) {
  detail::check_gated_rmsnorm(x, z, weight, y, rows, dim, eps);
  const std::int64_t per_task = std::max<std::int64_t>(1, kElementsPerTask / dim);
  const std::int64_t tasks = (rows + per_task - 1) / per_task;
  pool.parallel_for(tasks, [&](std::int64_t task, int) {
    const std::int64_t end = std::min(rows, (task + 1) * per_task);
    for (std::int64_t r = task * per_task; r < end; ++r)
      uk.row(x.data() + r * dim, z.data() + r * dim, weight.data(), y.data() + r * dim, dim, eps);
  });
}

void sigmoid_gate(const ukernel::SigmoidGate& uk, std::span<const float> x,
                  std::span<const float> gate, std::span<float> out, WorkerPool& pool) {
  detail::check_sigmoid_gate(x, gate, out);
  const std::int64_t n = static_cast<std::int64_t>(x.size());
  const std::int64_t tasks = (n + kElementsPerTask - 1) / kElementsPerTask;
  pool.parallel_for(tasks, [&](std::int64_t task, int) {
    const std::int64_t begin = task * kElementsPerTask;
    uk.range(x.data() + begin, gate.data() + begin, out.data() + begin,
             std::min(n, begin + kElementsPerTask) - begin);
  });
}

}  // namespace k3k::driver
