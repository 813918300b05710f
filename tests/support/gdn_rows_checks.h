// Checks of the Gated DeltaNet row-wise ops (gates, L2 norm, causal convolution, gated RMSNorm)
// and the sigmoid output gate on one layer against their float64 references under the layer's
// bounds, for the swept tests (tests/kernels/test_gdn_rows.cpp). Each returns the layer's outputs
// so a caller can compare runs and layers.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <span>
#include <string>
#include <vector>

#include "k3k/deltanet.h"
#include "k3k/reference/deltanet.h"
#include "support/layer_bounds.h"
#include "support/layer_checks.h"
#include "support/test_data.h"

namespace k3test {

// Inputs spanning the gates' regimes: a + dt_bias from -30 to 30 (softplus ~e^x to ~x), b to +-12.
struct GatesRun {
  std::vector<float> g, beta;
};
inline GatesRun check_gates(k3k::KernelPath path, std::int64_t tokens, int heads,
                            std::int64_t stride, k3k::WorkerPool& pool) {
  auto a = random_floats(static_cast<std::size_t>(tokens * stride), 101, 8.0);
  auto b = random_floats(a.size(), 102, 4.0);
  a[0] = -30.0f;
  a[1] = 30.0f;
  b[0] = -12.0f;
  const auto a_log = random_floats(static_cast<std::size_t>(heads), 103, 0.8);
  const auto dt_bias = random_floats(static_cast<std::size_t>(heads), 104, 0.5);
  GatesRun r{std::vector<float>(static_cast<std::size_t>(tokens * heads)),
             std::vector<float>(static_cast<std::size_t>(tokens * heads))};
  k3k::gdn_gates(path, a.data(), stride, b.data(), stride, a_log, dt_bias, r.g, r.beta, tokens,
                 heads, pool);
  const auto ref =
      k3k::reference::gdn_gates(a.data(), stride, b.data(), stride, a_log, dt_bias, tokens, heads);
  expect_within(std::string(k3k::to_string(path)) + " gdn_gates g", r.g, ref.g, ref.g_bound);
  expect_within(std::string(k3k::to_string(path)) + " gdn_gates beta", r.beta, ref.beta,
                ref.beta_bound);
  return r;
}

// q rows inside a wider conv-output row (stride), written to a contiguous output and in place.
inline std::vector<float> check_l2norm(k3k::KernelPath path, std::int64_t tokens, int heads,
                                       int dim, std::int64_t stride, k3k::WorkerPool& pool) {
  auto x = random_floats(static_cast<std::size_t>(tokens * stride), 111, 3.0);
  const float scale = static_cast<float>(1.0 / std::sqrt(double(dim)));
  std::vector<float> y(static_cast<std::size_t>(tokens * heads * dim));
  k3k::l2norm(path, x.data(), stride, y.data(), std::int64_t(heads) * dim, tokens, heads, dim,
              1e-6f, scale, pool);
  const auto ref = k3k::reference::l2norm(x.data(), stride, tokens, heads, dim, 1e-6f, scale,
                                          sum_depth(path, dim));
  expect_within(std::string(k3k::to_string(path)) + " l2norm strided", y, ref.out, ref.bound);
  k3k::l2norm(path, x.data(), stride, x.data(), stride, tokens, heads, dim, 1e-6f, scale, pool);
  std::vector<float> in_place;
  for (std::int64_t t = 0; t < tokens; ++t)
    in_place.insert(in_place.end(), x.begin() + t * stride, x.begin() + t * stride + heads * dim);
  EXPECT_TRUE(bitwise_equal(in_place, y)) << "in place differs from out of place";
  return y;
}

// A prefill of `tokens` from a non-zero state, then three decode tokens: outputs and the rolled
// state against the reference; the decode outputs must equal a prefill over all tokens at once.
inline std::vector<float> check_conv(k3k::KernelPath path, std::int64_t tokens, int channels,
                                     int kernel, k3k::WorkerPool& pool) {
  const std::int64_t total = tokens + 3;
  const auto x = random_floats(static_cast<std::size_t>(total * channels), 121, 1.0);
  const auto w = random_floats(static_cast<std::size_t>(kernel * channels), 122, 0.4);
  const auto state0 = random_floats(static_cast<std::size_t>((kernel - 1) * channels), 123, 1.0);
  std::vector<float> state = state0, y(x.size());
  const std::size_t row = static_cast<std::size_t>(channels);
  k3k::causal_conv1d(path, std::span(x).first(tokens * row), w, state,
                     std::span(y).first(tokens * row), tokens, channels, kernel, pool);
  for (std::int64_t t = tokens; t < total; ++t) {
    k3k::causal_conv1d(path, std::span(x).subspan(t * row, row), w, state,
                       std::span(y).subspan(t * row, row), 1, channels, kernel, pool);
  }
  const auto ref = k3k::reference::causal_conv1d(x, w, state0, total, channels, kernel);
  expect_within(std::string(k3k::to_string(path)) + " causal_conv1d", y, ref.out, ref.bound);
  EXPECT_TRUE(bitwise_equal(state, ref.state_out)) << "rolled state";
  std::vector<float> state_all = state0, y_all(x.size());
  k3k::causal_conv1d(path, x, w, state_all, y_all, total, channels, kernel, pool);
  EXPECT_TRUE(bitwise_equal(y, y_all)) << "decode tokens differ from one prefill";
  EXPECT_TRUE(bitwise_equal(state, state_all));
  return y;
}

inline std::vector<float> check_gated_rmsnorm(k3k::KernelPath path, std::int64_t rows, int dim,
                                              k3k::WorkerPool& pool) {
  const auto x = random_floats(static_cast<std::size_t>(rows * dim), 131, 2.0);
  auto z = random_floats(x.size(), 132, 3.0);
  z[0] = -100.0f;  // exp(-z) overflows: silu is -0
  const auto w = random_floats(static_cast<std::size_t>(dim), 133, 1.0, 0.2);
  std::vector<float> y(x.size());
  k3k::gated_rmsnorm(path, x, z, w, y, rows, dim, 1e-6f, pool);
  const auto ref = k3k::reference::gated_rmsnorm(x, z, w, rows, dim, 1e-6f, sum_depth(path, dim));
  expect_within(std::string(k3k::to_string(path)) + " gated_rmsnorm", y, ref.out, ref.bound);
  std::vector<float> in_place = x;
  k3k::gated_rmsnorm(path, in_place, z, w, in_place, rows, dim, 1e-6f, pool);
  EXPECT_TRUE(bitwise_equal(in_place, y)) << "in place differs";
  return y;
}

inline std::vector<float> check_sigmoid_gate(k3k::KernelPath path, std::size_t n,
                                             k3k::WorkerPool& pool) {
  const auto x = random_floats(n, 141, 2.0);
  auto g = random_floats(n, 142, 5.0);
  g[1] = -100.0f;
  std::vector<float> out(n);
  k3k::sigmoid_gate(path, x, g, out, pool);
  const auto ref = k3k::reference::sigmoid_gate(x, g);
  expect_within(std::string(k3k::to_string(path)) + " sigmoid_gate", out, ref.out, ref.bound);
  std::vector<float> in_place = x;
  k3k::sigmoid_gate(path, in_place, g, in_place, pool);
  EXPECT_TRUE(bitwise_equal(in_place, out)) << "in place differs";
  return out;
}

}  // namespace k3test
