// Argument checks of the Gated DeltaNet drivers (drivers/deltanet.cpp, drivers/deltanet_rows.cpp).
// Each throws std::invalid_argument naming the op and the field, before anything is written.
#pragma once

#include <cstdint>
#include <span>

#include "k3k/deltanet.h"

namespace k3k::detail {

// tokens, the inputs' strides and pointers, state and out sizes (out: tokens x v_heads x v_dim).
void check_gdn(const char* op, const GdnDims& dims, std::int64_t tokens, const GdnInputs& in,
               std::span<const float> state, std::span<const float> out);
void check_gdn_gates(const float* a, std::int64_t a_stride, const float* b, std::int64_t b_stride,
                     std::span<const float> a_log, std::span<const float> dt_bias,
                     std::span<const float> g, std::span<const float> beta, std::int64_t tokens,
                     int heads);
void check_l2norm(const float* x, std::int64_t x_stride, const float* y, std::int64_t y_stride,
                  std::int64_t tokens, int heads, int dim, float eps, float scale);
void check_causal_conv1d(std::span<const float> x, std::span<const float> weight,
                         std::span<const float> state, std::span<const float> y,
                         std::int64_t tokens, int channels, int kernel);
void check_gated_rmsnorm(std::span<const float> x, std::span<const float> z,
                         std::span<const float> weight, std::span<const float> y,
                         std::int64_t rows, int dim, float eps);
void check_sigmoid_gate(std::span<const float> x, std::span<const float> gate,
                        std::span<const float> out);

}  // namespace k3k::detail
