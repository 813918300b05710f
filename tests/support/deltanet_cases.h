// Seeded Gated DeltaNet inputs shaped like a Qwen3.5 linear-attention layer's, shared by the
// generic, RVV and golden tests: q and k L2-normalised (q scaled by 1/sqrt(k_dim)) in double and
// rounded once, v ~ N(0, 1), g = -exp(U(-5, 1)) (decays from 0.9933 to 0.066 per token, the range
// -exp(A_log) softplus(.) takes), beta = sigmoid(N(0, 1.5)), a non-zero initial state.
#pragma once

#include <cmath>
#include <cstdint>
#include <span>
#include <vector>

#include "k3k/deltanet.h"
#include "k3k/seeded_random.h"
#include "support/test_data.h"

namespace k3test {

struct GdnCase {
  k3k::GdnDims dims;
  std::int64_t tokens = 0;
  std::vector<float> q, k, v, g, beta, state;  // q, k: [T][k_heads][k_dim], v: [T][v_heads][v_dim]

  k3k::GdnInputs inputs(std::int64_t first_token = 0) const {
    const std::int64_t qk_row = std::int64_t(dims.k_heads) * dims.k_dim;
    const std::int64_t v_row = std::int64_t(dims.v_heads) * dims.v_dim;
    return {q.data() + first_token * qk_row, qk_row, k.data() + first_token * qk_row, qk_row,
            v.data() + first_token * v_row,  v_row,  g.data() + first_token * dims.v_heads,
            beta.data() + first_token * dims.v_heads};
  }
  std::int64_t out_floats() const { return tokens * dims.v_heads * dims.v_dim; }
};

inline void normalise_rows(std::vector<float>& x, int dim, double scale) {
  for (std::size_t r = 0; r < x.size() / dim; ++r) {
    double ss = 0.0;
    for (int i = 0; i < dim; ++i) ss += double(x[r * dim + i]) * x[r * dim + i];
    const double inv = scale / std::sqrt(ss + 1e-6);
    for (int i = 0; i < dim; ++i) x[r * dim + i] = static_cast<float>(x[r * dim + i] * inv);
  }
}

inline GdnCase make_gdn_case(const k3k::GdnDims& d, std::int64_t tokens, std::uint64_t seed) {
  GdnCase c;
  c.dims = d;
  c.tokens = tokens;
  const std::size_t qk = static_cast<std::size_t>(tokens * d.k_heads * d.k_dim);
  c.q = random_floats(qk, seed);
  c.k = random_floats(qk, seed + 1);
  normalise_rows(c.q, d.k_dim, 1.0 / std::sqrt(double(d.k_dim)));
  normalise_rows(c.k, d.k_dim, 1.0);
  c.v = random_floats(static_cast<std::size_t>(tokens * d.v_heads * d.v_dim), seed + 2);
  k3k::SeededRandom rng(seed + 3);
  c.g.resize(static_cast<std::size_t>(tokens * d.v_heads));
  c.beta.resize(c.g.size());
  for (auto& x : c.g) x = static_cast<float>(-std::exp(rng.uniform(-5.0, 1.0)));
  for (auto& x : c.beta) x = static_cast<float>(1.0 / (1.0 + std::exp(-rng.normal(0.0, 1.5))));
  c.state = random_floats(static_cast<std::size_t>(d.state_floats()), seed + 4, 0.3);
  return c;
}

}  // namespace k3test
