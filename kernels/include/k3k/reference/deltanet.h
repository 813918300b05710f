// Float64 references for the Gated DeltaNet ops (k3k/deltanet.h) and their per-element error
// bounds (derivations in kernels/reference/deltanet_reference.cpp and gdn_rows_reference.cpp).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "k3k/deltanet.h"

namespace k3k::reference {

// ---- the recurrence ----------------------------------------------------------------------------

// The accumulation structure of the kernel under test, which the bound is derived for.
struct GdnErrorModel {
  int chunk = 1;               // tokens per chunk (gdn_decode: 1)
  std::int64_t dot_depth = 0;  // roundings per product of the layer's dot (the C x C products, q.k)
};
// The generic layer's dot (16 lanes + tree) and the RVV layer's (rvv_dot_depth).
GdnErrorModel generic_gdn_error_model(int k_dim, int chunk);
GdnErrorModel rvv_gdn_error_model(int k_dim, int chunk, int vlenb);

struct GdnReference {
  std::vector<double> out;          // [tokens][v_heads][v_dim]
  std::vector<double> out_bound;    // per element: max allowed |kernel - out|
  std::vector<double> state;        // [v_heads][k_dim][v_dim] after the last token
  std::vector<double> state_bound;  // per element
};

// The straightforward token-by-token recurrence in double from the float inputs and initial
// state: S = exp(g) S; delta = beta (v - k^T S); S += k delta^T; o = q^T S. The bound covers a
// kernel that processes chunks of model.chunk tokens as ukernel::GdnChunk describes.
GdnReference gated_deltanet(const GdnDims& dims, std::int64_t tokens, const GdnInputs& in,
                            std::span<const float> state, const GdnErrorModel& model);

// ---- the row-wise ops --------------------------------------------------------------------------

struct RowsReference {
  std::vector<double> out;
  std::vector<double> bound;
};

// g and beta of gdn_gates (a, b read with their strides), [tokens][heads] each.
struct GatesReference {
  std::vector<double> g, g_bound, beta, beta_bound;
};
GatesReference gdn_gates(const float* a, std::int64_t a_stride, const float* b,
                         std::int64_t b_stride, std::span<const float> a_log,
                         std::span<const float> dt_bias, std::int64_t tokens, int heads);

// l2norm over [tokens][heads][dim] rows (x read with its stride; out contiguous). sum_depth: the
// roundings per term of the kernel's sum of squares (0: the generic layer's).
RowsReference l2norm(const float* x, std::int64_t x_stride, std::int64_t tokens, int heads, int dim,
                     float eps, float scale, std::int64_t sum_depth = 0);

// causal_conv1d: out = y [tokens][channels]; state_out = the new rolling state (exact copies).
struct ConvReference {
  std::vector<double> out, bound;
  std::vector<float> state_out;
};
ConvReference causal_conv1d(std::span<const float> x, std::span<const float> weight,
                            std::span<const float> state, std::int64_t tokens, int channels,
                            int kernel);

// gated_rmsnorm over [rows][dim]; sum_depth as for l2norm.
RowsReference gated_rmsnorm(std::span<const float> x, std::span<const float> z,
                            std::span<const float> weight, std::int64_t rows, int dim, float eps,
                            std::int64_t sum_depth = 0);

// sigmoid_gate: x * sigmoid(gate).
RowsReference sigmoid_gate(std::span<const float> x, std::span<const float> gate);

}  // namespace k3k::reference
