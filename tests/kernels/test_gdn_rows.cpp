// The Gated DeltaNet row-wise ops and the attention output gate on every layer
// (support/layer_sweep.h): against their float64 references under the layer's bounds at Qwen3.5
// shapes and odd ones (strided rows, in place, a convolution state rolled over prefill and decode
// calls, a prefill shorter than the convolution's history, odd dims), bitwise identical for 1 and 3
// workers, the gates within the two layers' bounds of the generic layer, and argument errors.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "k3k/deltanet.h"
#include "k3k/worker_pool.h"
#include "support/gdn_rows_checks.h"
#include "support/layer_checks.h"
#include "support/layer_sweep.h"
#include "support/test_data.h"

namespace {

using k3k::KernelPath;

k3k::WorkerPool& pool(int n) {
  static k3k::WorkerPool p1(1), p2(2), p3(3);
  return n == 1 ? p1 : n == 2 ? p2 : p3;
}

class GdnRows : public k3test::OnLayer {};

TEST_P(GdnRows, Gates) {
  const auto a = k3test::check_gates(layer(), 50, 16, 32, pool(3));  // Linear rows padded to 32
  const auto b = k3test::check_gates(layer(), 50, 16, 32, pool(1));
  EXPECT_TRUE(k3test::bitwise_equal(a.g, b.g));
  EXPECT_TRUE(k3test::bitwise_equal(a.beta, b.beta));
  k3test::check_gates(layer(), 3, 5, 5, pool(1));
  if (!is_generic()) {
    // Both within gamma_27 of the reference: within 2 gamma_27 relative of each other.
    const auto gen = k3test::check_gates(KernelPath::kGeneric, 50, 16, 32, pool(3));
    for (std::size_t i = 0; i < a.g.size(); ++i) {
      EXPECT_NEAR(a.g[i], gen.g[i], 3.3e-6 * std::fabs(gen.g[i]) + 1e-30) << i;
    }
  }
}

TEST_P(GdnRows, L2Norm) {
  const auto a = k3test::check_l2norm(layer(), 20, 16, 128, 6144, pool(3));  // q in the conv row
  EXPECT_TRUE(k3test::bitwise_equal(a, k3test::check_l2norm(layer(), 20, 16, 128, 6144, pool(1))));
  k3test::check_l2norm(layer(), 3, 3, 37, 200, pool(3));
}

TEST_P(GdnRows, CausalConvRollsItsState) {
  const auto a = k3test::check_conv(layer(), 37, 6144, 4, pool(3));  // Qwen3.5's conv channels
  EXPECT_TRUE(k3test::bitwise_equal(a, k3test::check_conv(layer(), 37, 6144, 4, pool(1))));
  k3test::check_conv(layer(), 2, 300, 4, pool(3));  // fewer tokens than the history
  k3test::check_conv(layer(), 5, 17, 1, pool(3));   // no history at all
}

TEST_P(GdnRows, GatedRmsnorm) {
  const auto a = k3test::check_gated_rmsnorm(layer(), 40, 128, pool(3));
  EXPECT_TRUE(k3test::bitwise_equal(a, k3test::check_gated_rmsnorm(layer(), 40, 128, pool(1))));
  k3test::check_gated_rmsnorm(layer(), 3, 45, pool(3));
}

TEST_P(GdnRows, SigmoidGate) {
  const auto a = k3test::check_sigmoid_gate(layer(), 40000, pool(3));
  EXPECT_TRUE(k3test::bitwise_equal(a, k3test::check_sigmoid_gate(layer(), 40000, pool(1))));
  k3test::check_sigmoid_gate(layer(), 4099, pool(3));  // a partial last strip
}

TEST_P(GdnRows, ArgumentErrorsNameTheField) {
  std::vector<float> buf(4096), out(4096), small(3);
  k3test::expect_rejected(layer(), "a_stride (3) < heads (4)", [&](KernelPath path) {
    k3k::gdn_gates(path, buf.data(), 3, buf.data(), 4, std::span(buf).first(4),
                   std::span(buf).first(4), std::span(out).first(8), std::span(out).subspan(8, 8),
                   2, 4, pool(1));
  });
  k3test::expect_rejected(layer(), "in place needs x_stride == y_stride", [&](KernelPath path) {
    k3k::l2norm(path, buf.data(), 128, buf.data(), 64, 2, 1, 64, 1e-6f, 1.0f, pool(1));
  });
  k3test::expect_rejected(
      layer(), "state.size() (3) != (kernel - 1) * channels (48)", [&](KernelPath path) {
        k3k::causal_conv1d(path, std::span(buf).first(64), std::span(buf).subspan(64, 64), small,
                           std::span(out).first(64), 4, 16, 4, pool(1));
      });
  k3test::expect_rejected(layer(), "eps (-1) must be finite and >= 0", [&](KernelPath path) {
    k3k::gated_rmsnorm(path, std::span(buf).first(64), std::span(buf).first(64),
                       std::span(buf).first(16), std::span(out).first(64), 4, 16, -1.0f, pool(1));
  });
  k3test::expect_rejected(layer(), "gate.size() (7)", [&](KernelPath path) {
    k3k::sigmoid_gate(path, std::span(buf).first(8), std::span(buf).first(7),
                      std::span(out).first(8), pool(1));
  });
}

K3_SWEEP_LAYERS(GdnRows);

}  // namespace
