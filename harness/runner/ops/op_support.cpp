#include "harness/runner/ops/op_support.h"

#include <algorithm>

#include "k3k/seeded_random.h"

namespace k3runner {

k3k::AlignedBuffer<float> make_activations(std::int64_t rows, std::int64_t cols, std::uint64_t seed) {
  k3k::AlignedBuffer<float> a(static_cast<std::size_t>(rows * cols));
  k3k::SeededRandom rng(seed);
  for (std::int64_t r = 0; r < rows; ++r) {
    for (std::int64_t c = 0; c < cols; ++c) {
      const double scale = (c % 97 == 13) ? 10.0 : 1.0;
      a[static_cast<std::size_t>(r * cols + c)] = static_cast<float>(rng.normal() * scale);
    }
  }
  return a;
}

k3k::AlignedBuffer<float> make_normal(std::int64_t count, double stddev, std::uint64_t seed) {
  k3k::AlignedBuffer<float> a(static_cast<std::size_t>(count));
  k3k::SeededRandom rng(seed);
  for (auto& x : a) x = static_cast<float>(rng.normal(0.0, stddev));
  return a;
}

std::vector<std::int64_t> rows_to_check(std::int64_t rows, bool full) {
  std::vector<std::int64_t> out;
  if (full || rows <= 8) {
    for (std::int64_t r = 0; r < rows; ++r) out.push_back(r);
    return out;
  }
  for (int i = 0; i < 8; ++i) out.push_back(i * (rows - 1) / 7);
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

Accuracy compare_outputs(std::span<const float> got, std::span<const double> ref,
                         std::span<const double> bound, std::string reference, std::int64_t total) {
  const auto c = k3k::reference::compare_to_reference(got, ref, bound);
  Accuracy a;
  a.reference = std::move(reference);
  a.checked = c.count;
  a.total = total;
  a.max_abs_err = c.max_abs_err;
  a.max_rel_err = c.max_rel_err;
  a.worst_ratio = c.worst_ratio;
  a.worst_bound = c.worst_bound;
  a.pass = c.pass;
  if (c.failures > 0) a.extra["failures"] = c.failures;
  return a;
}

}  // namespace k3runner
