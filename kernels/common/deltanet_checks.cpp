#include "common/deltanet_checks.h"

#include <cmath>

#include "common/checks.h"

namespace k3k::detail {
namespace {

void check_size(const char* op, const char* name, std::size_t size, std::int64_t want,
                const char* what) {
  if (static_cast<std::int64_t>(size) != want)
    fail(op, ": ", name, ".size() (", size, ") != ", what, " (", want, ")");
}

void check_eps(const char* op, float eps) {
  if (!(eps >= 0.0f) || !std::isfinite(eps)) fail(op, ": eps (", eps, ") must be finite and >= 0");
}

}  // namespace

void check_gdn(const char* op, const GdnDims& d, std::int64_t tokens, const GdnInputs& in,
               std::span<const float> state, std::span<const float> out) {
  validate(d, op);
  if (tokens < 0) fail(op, ": tokens (", tokens, ") is negative");
  if (tokens > 0 && (in.q == nullptr || in.k == nullptr || in.v == nullptr || in.g == nullptr ||
                     in.beta == nullptr))
    fail(op, ": q, k, v, g and beta must all be given");
  const std::int64_t qk_row = std::int64_t(d.k_heads) * d.k_dim;
  const std::int64_t v_row = std::int64_t(d.v_heads) * d.v_dim;
  if (in.q_stride < qk_row) fail(op, ": q_stride (", in.q_stride, ") < k_heads * k_dim (", qk_row, ")");
  if (in.k_stride < qk_row) fail(op, ": k_stride (", in.k_stride, ") < k_heads * k_dim (", qk_row, ")");
  if (in.v_stride < v_row) fail(op, ": v_stride (", in.v_stride, ") < v_heads * v_dim (", v_row, ")");
  check_size(op, "state", state.size(), d.state_floats(), "v_heads * k_dim * v_dim");
  check_size(op, "out", out.size(), tokens * v_row, "tokens * v_heads * v_dim");
  if (partially_overlap(state.data(), state.size(), out.data(), out.size()) ||
      state.data() == out.data())
    fail(op, ": out overlaps the state");
}

void check_gdn_gates(const float* a, std::int64_t a_stride, const float* b, std::int64_t b_stride,
                     std::span<const float> a_log, std::span<const float> dt_bias,
                     std::span<const float> g, std::span<const float> beta, std::int64_t tokens,
                     int heads) {
  const char* op = "gdn_gates";
  if (tokens < 0) fail(op, ": tokens (", tokens, ") is negative");
  if (heads < 1) fail(op, ": heads (", heads, ") must be positive");
  if (a == nullptr || b == nullptr) fail(op, ": a and b must be given");
  if (a_stride < heads) fail(op, ": a_stride (", a_stride, ") < heads (", heads, ")");
  if (b_stride < heads) fail(op, ": b_stride (", b_stride, ") < heads (", heads, ")");
  check_size(op, "a_log", a_log.size(), heads, "heads");
  check_size(op, "dt_bias", dt_bias.size(), heads, "heads");
  check_size(op, "g", g.size(), tokens * heads, "tokens * heads");
  check_size(op, "beta", beta.size(), tokens * heads, "tokens * heads");
  if (partially_overlap(g.data(), g.size(), beta.data(), beta.size()) || g.data() == beta.data())
    fail(op, ": g and beta overlap");
}

void check_l2norm(const float* x, std::int64_t x_stride, const float* y, std::int64_t y_stride,
                  std::int64_t tokens, int heads, int dim, float eps, float scale) {
  const char* op = "l2norm";
  if (tokens < 0) fail(op, ": tokens (", tokens, ") is negative");
  if (heads < 1 || dim < 1) fail(op, ": heads (", heads, ") and dim (", dim, ") must be positive");
  if (x == nullptr || y == nullptr) fail(op, ": x and y must be given");
  const std::int64_t row = std::int64_t(heads) * dim;
  if (x_stride < row) fail(op, ": x_stride (", x_stride, ") < heads * dim (", row, ")");
  if (y_stride < row) fail(op, ": y_stride (", y_stride, ") < heads * dim (", row, ")");
  if (x != y && tokens > 0 && partially_overlap(x, x_stride * (tokens - 1) + row, y, y_stride * (tokens - 1) + row))
    fail(op, ": y partially overlaps x (in place must pass the same pointer and stride)");
  if (x == y && x_stride != y_stride) fail(op, ": in place needs x_stride == y_stride");
  check_eps(op, eps);
  if (!std::isfinite(scale)) fail(op, ": scale (", scale, ") must be finite");
}

void check_causal_conv1d(std::span<const float> x, std::span<const float> weight,
                         std::span<const float> state, std::span<const float> y,
                         std::int64_t tokens, int channels, int kernel) {
  const char* op = "causal_conv1d";
  if (tokens < 0) fail(op, ": tokens (", tokens, ") is negative");
  if (channels < 1) fail(op, ": channels (", channels, ") must be positive");
  if (kernel < 1 || kernel > 16) fail(op, ": kernel (", kernel, ") must be in [1, 16]");
  check_size(op, "x", x.size(), tokens * channels, "tokens * channels");
  check_size(op, "y", y.size(), tokens * channels, "tokens * channels");
  check_size(op, "weight", weight.size(), std::int64_t(kernel) * channels, "kernel * channels");
  check_size(op, "state", state.size(), std::int64_t(kernel - 1) * channels,
             "(kernel - 1) * channels");
  if (partially_overlap(x.data(), x.size(), y.data(), y.size()) || (!x.empty() && x.data() == y.data()))
    fail(op, ": y overlaps x");
  if (partially_overlap(state.data(), state.size(), y.data(), y.size())) fail(op, ": y overlaps the state");
}

void check_gated_rmsnorm(std::span<const float> x, std::span<const float> z,
                         std::span<const float> weight, std::span<const float> y,
                         std::int64_t rows, int dim, float eps) {
  const char* op = "gated_rmsnorm";
  if (rows < 0) fail(op, ": rows (", rows, ") is negative");
  if (dim < 1) fail(op, ": dim (", dim, ") must be positive");
  check_eps(op, eps);
  check_size(op, "x", x.size(), rows * dim, "rows * dim");
  check_size(op, "z", z.size(), rows * dim, "rows * dim");
  check_size(op, "y", y.size(), rows * dim, "rows * dim");
  check_size(op, "weight", weight.size(), dim, "dim");
  if (partially_overlap(x.data(), x.size(), y.data(), y.size())) fail(op, ": y partially overlaps x");
  if (partially_overlap(z.data(), z.size(), y.data(), y.size()) || (!z.empty() && z.data() == y.data()))
    fail(op, ": y overlaps z");
}

void check_sigmoid_gate(std::span<const float> x, std::span<const float> gate,
                        std::span<const float> out) {
  const char* op = "sigmoid_gate";
  check_size(op, "gate", gate.size(), static_cast<std::int64_t>(x.size()), "x.size()");
  check_size(op, "out", out.size(), static_cast<std::int64_t>(x.size()), "x.size()");
  if (partially_overlap(x.data(), x.size(), out.data(), out.size())) fail(op, ": out partially overlaps x");
  if (partially_overlap(gate.data(), gate.size(), out.data(), out.size()) ||
      (!gate.empty() && gate.data() == out.data()))
    fail(op, ": out overlaps gate");
}

}  // namespace k3k::detail

namespace k3k {

void validate(const GdnDims& d, const char* op) {
  using detail::fail;
  if (d.k_heads < 1) fail(op, ": k_heads (", d.k_heads, ") must be positive");
  if (d.v_heads < 1 || d.v_heads % d.k_heads != 0)
    fail(op, ": v_heads (", d.v_heads, ") must be a positive multiple of k_heads (", d.k_heads, ")");
  if (d.k_dim < 1 || d.k_dim > 4096) fail(op, ": k_dim (", d.k_dim, ") must be in [1, 4096]");
  if (d.v_dim < 1 || d.v_dim > 4096) fail(op, ": v_dim (", d.v_dim, ") must be in [1, 4096]");
}

void validate(const GdnPrefillTiling& t, const char* op) {
  using detail::fail;
  if (t.chunk < 1 || t.chunk > 1024) fail(op, ": chunk (", t.chunk, ") must be in [1, 1024]");
  if (t.columns < 1) fail(op, ": columns (", t.columns, ") must be positive");
}

void validate(const GdnDecodeTiling& t, const char* op) {
  if (t.columns < 1) detail::fail(op, ": columns (", t.columns, ") must be positive");
}

}  // namespace k3k
