// Small helpers shared by the op cases: synthetic inputs, row sampling, accuracy records.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "k3k/aligned_buffer.h"
#include "k3k/reference/compare.h"
#include "harness/runner/op_case.h"

namespace k3runner {

// Activation-like data: normal(0, 1) with a few channels 10x larger (LLM activations carry
// outlier channels; per-row absmax quantisation must cope with them).
k3k::AlignedBuffer<float> make_activations(std::int64_t rows, std::int64_t cols, std::uint64_t seed);
// Plain normal(0, stddev) data.
k3k::AlignedBuffer<float> make_normal(std::int64_t count, double stddev, std::uint64_t seed);

// Rows whose outputs the accuracy check compares: all of them when `full`, otherwise up to 8
// spread over the range, always including the first and last (edge tiles) rows.
std::vector<std::int64_t> rows_to_check(std::int64_t rows, bool full);

// Compares and packages the result; `bound` is the per-element bound the comparison used.
Accuracy compare_outputs(std::span<const float> got, std::span<const double> ref,
                         std::span<const double> bound, std::string reference, std::int64_t total);

template <typename T>
DumpArray dump_of(std::string name, std::string dtype, std::vector<std::int64_t> shape,
                  std::string layout, const T* data, std::int64_t count) {
  return DumpArray{std::move(name), std::move(dtype), std::move(shape), std::move(layout), data,
                   count * static_cast<std::int64_t>(sizeof(T))};
}

}  // namespace k3runner
