// Float64 references for activation quantisation, W4B64 Linear and embedding lookup, with the
// error bounds the float kernels must meet.
#pragma once

#include <cstdint>
#include <vector>

#include "k3k/linear.h"
#include "k3k/quantize.h"
#include "k3k/w4b64.h"

namespace k3k::reference {

struct QuantizedRows {
  std::int64_t m = 0, k = 0;
  std::vector<std::int8_t> codes;  // [M][K]
  std::vector<double> scale;       // [M] absmax / 127, in double
  std::vector<double> unrounded;   // [M][K] a / sa before rounding (to locate rounding ties)
};
// round-half-even(a / (absmax/127)) in double, clamped to [-127, 127].
QuantizedRows quantize_rows(const float* a, std::int64_t m, std::int64_t k);

// Unpacks a kernel activation pack to plain [M][K] codes (layout-independent view).
std::vector<std::int8_t> unpack_codes(const PackedActivations& a);

struct LinearResult {
  std::int64_t m = 0, n = 0;
  std::vector<double> y;      // [M][N] row-major, final values (epilogue applied)
  std::vector<double> bound;  // [M][N] max allowed |kernel - y| for a float32 kernel
};

// The reference on the SAME quantised activations the kernel used (codes [M][K] and the float
// scales sa[M] the kernel computed), so the comparison isolates the kernel's float arithmetic.
// residual, if given, is row-major [M][N]. Bound derivation in linear_ref.cpp.
LinearResult linear_w4b64(const W4B64Storage& w, const std::int8_t* codes, const float* sa,
                          std::int64_t m, const float* bias, const float* residual, float clamp_min,
                          float clamp_max);

// The extra error term of the IME2 `.hp` decode (Accumulation::kFp16BlockScale, k3k/linear.h;
// kernels/ime2/README.md §3.1) over the int32 Linear bound, per output [rows][N]:
//   |sa[r]| * sum_b gamma16_6 * |s_b| * sum_{k in b} (lo_k + 16 |hi_k|) * |q_k - 8|
// with x = 16 hi + lo the activation code's nibbles and gamma16_6 = 6u / (1 - 6u), u = 2^-10 (one
// fp16 ulp: holds for any rounding of the accumulation). codes: [rows][K]; sa: [rows].
std::vector<double> linear_hp_extra_bound(const W4B64Storage& w, const std::int8_t* codes,
                                          const float* sa, std::int64_t rows);

// Unquantised float64 product a[M][K] x dequant(W)^T (no epilogue): measures the total error
// of the W4A8 scheme, reported for information, never used as a pass/fail gate.
std::vector<double> linear_unquantized_activations(const W4B64Storage& w, const float* a,
                                                   std::int64_t m);

// Dequantised rows in float64 with the bound for a float32 kernel computing s*(q-8)+beta.
LinearResult embedding_lookup(const W4B64Storage& table, const std::int32_t* tokens,
                              std::int64_t count);

// Kernel output in `layout` -> row-major [M][N] floats.
std::vector<float> to_row_major(const float* out, OutputLayout layout, std::int64_t m,
                                std::int64_t n);

}  // namespace k3k::reference
