// Helpers shared by the test suites: seeded data and exception-message capture.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "k3k/seeded_random.h"

namespace k3test {

// normal(0, stddev) floats, reproducible for a seed on every target.
inline std::vector<float> random_floats(std::size_t n, std::uint64_t seed, double stddev = 1.0) {
  k3k::SeededRandom rng(seed);
  std::vector<float> v(n);
  for (auto& x : v) x = static_cast<float>(rng.normal(0.0, stddev));
  return v;
}

// The message of the std::invalid_argument fn throws, or a marker when it throws none.
template <typename Fn>
std::string thrown_message(Fn&& fn) {
  try {
    fn();
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "<no std::invalid_argument thrown>";
}

}  // namespace k3test
