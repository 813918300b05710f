// Reproducible synthetic data. Only std::mt19937_64's raw output is used (its sequence is fixed by
// the C++ standard); the distributions are written out here because std::normal_distribution and
// friends differ between standard libraries, and a seed must mean the same data on every target.
#pragma once

#include <cmath>
#include <cstdint>
#include <numbers>
#include <random>

namespace k3k {

class SeededRandom {
 public:
  explicit SeededRandom(std::uint64_t seed) : engine_(seed) {}

  // Uniform in [0, 1) with 53 random bits.
  double uniform() { return static_cast<double>(engine_() >> 11) * 0x1.0p-53; }
  double uniform(double lo, double hi) { return lo + (hi - lo) * uniform(); }

  // Standard normal by Box-Muller (the second value of each pair is discarded for simplicity).
  double normal() {
    double u1 = uniform();
    while (u1 <= 0.0) u1 = uniform();
    const double u2 = uniform();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
  }
  double normal(double mean, double stddev) { return mean + stddev * normal(); }

  std::uint64_t next() { return engine_(); }

 private:
  std::mt19937_64 engine_;
};

}  // namespace k3k
