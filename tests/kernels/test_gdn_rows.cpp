// The Gated DeltaNet row-wise ops and the attention output gate on the generic layer: against their
// float64 references at Qwen3.5 shapes and odd ones (strided rows, in place, a convolution state
// rolled over prefill and decode calls, a prefill shorter than the convolution's history), bitwise
// identical for 1 and 3 workers, and their argument errors.
#include <gtest/gtest.h>

#include "k3k/deltanet.h"
#include "k3k/worker_pool.h"
#include "support/gdn_rows_checks.h"
#include "support/test_data.h"

namespace {

using k3k::KernelPath;
constexpr KernelPath kGen = KernelPath::kGeneric;

k3k::WorkerPool& pool(int n) {
  static k3k::WorkerPool p1(1), p3(3);
  return n == 1 ? p1 : p3;
}

TEST(GdnRows, Gates) {
  const auto a = k3test::check_gates(kGen, 50, 16, 32, pool(3));  // Linear rows padded to 32
  const auto b = k3test::check_gates(kGen, 50, 16, 32, pool(1));
  EXPECT_TRUE(k3test::bitwise_equal(a.g, b.g));
  EXPECT_TRUE(k3test::bitwise_equal(a.beta, b.beta));
  k3test::check_gates(kGen, 3, 5, 5, pool(1));
}

TEST(GdnRows, L2Norm) {
  const auto a = k3test::check_l2norm(kGen, 20, 16, 128, 6144, pool(3));  // q inside the conv row
  EXPECT_TRUE(k3test::bitwise_equal(a, k3test::check_l2norm(kGen, 20, 16, 128, 6144, pool(1))));
  k3test::check_l2norm(kGen, 3, 3, 37, 200, pool(3));
}

TEST(GdnRows, CausalConvRollsItsState) {
  const auto a = k3test::check_conv(kGen, 37, 6144, 4, pool(3));  // Qwen3.5's conv channels
  EXPECT_TRUE(k3test::bitwise_equal(a, k3test::check_conv(kGen, 37, 6144, 4, pool(1))));
  k3test::check_conv(kGen, 2, 300, 4, pool(3));  // fewer tokens than the history
  k3test::check_conv(kGen, 5, 17, 1, pool(3));   // no history at all
}

TEST(GdnRows, GatedRmsnorm) {
  const auto a = k3test::check_gated_rmsnorm(kGen, 40, 128, pool(3));
  EXPECT_TRUE(k3test::bitwise_equal(a, k3test::check_gated_rmsnorm(kGen, 40, 128, pool(1))));
  k3test::check_gated_rmsnorm(kGen, 3, 45, pool(3));
}

TEST(GdnRows, SigmoidGate) {
  const auto a = k3test::check_sigmoid_gate(kGen, 40000, pool(3));
  EXPECT_TRUE(k3test::bitwise_equal(a, k3test::check_sigmoid_gate(kGen, 40000, pool(1))));
}

TEST(GdnRows, ArgumentErrorsNameTheField) {
  std::vector<float> buf(4096), out(4096), small(3);
  auto has = [](const std::string& msg, const char* what) {
    return msg.find(what) != std::string::npos;
  };
  EXPECT_TRUE(has(k3test::thrown_message([&] {
                    k3k::gdn_gates(kGen, buf.data(), 3, buf.data(), 4, std::span(buf).first(4),
                                   std::span(buf).first(4), std::span(out).first(8),
                                   std::span(out).subspan(8, 8), 2, 4, pool(1));
                  }),
                  "a_stride (3) < heads (4)"));
  EXPECT_TRUE(has(k3test::thrown_message([&] {
                    k3k::l2norm(kGen, buf.data(), 128, buf.data(), 64, 2, 1, 64, 1e-6f, 1.0f, pool(1));
                  }),
                  "in place needs x_stride == y_stride"));
  EXPECT_TRUE(has(k3test::thrown_message([&] {
                    k3k::causal_conv1d(kGen, std::span(buf).first(64), std::span(buf).subspan(64, 64),
                                       small, std::span(out).first(64), 4, 16, 4, pool(1));
                  }),
                  "state.size() (3) != (kernel - 1) * channels (48)"));
  EXPECT_TRUE(has(k3test::thrown_message([&] {
                    k3k::gated_rmsnorm(kGen, std::span(buf).first(64), std::span(buf).first(64),
                                       std::span(buf).first(16), std::span(out).first(64), 4, 16,
                                       -1.0f, pool(1));
                  }),
                  "eps (-1) must be finite and >= 0"));
  EXPECT_TRUE(has(k3test::thrown_message([&] {
                    k3k::sigmoid_gate(kGen, std::span(buf).first(8), std::span(buf).first(7),
                                      std::span(out).first(8), pool(1));
                  }),
                  "gate.size() (7)"));
}

}  // namespace
