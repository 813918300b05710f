// Shuffles for permutation tests that give the same p-values on every platform for one seed:
// std::shuffle and std::uniform_int_distribution are implementation-defined, so the draws are
// taken from std::mt19937_64 (whose output the standard fixes) by rejection sampling, and the
// shuffle is Fisher-Yates (Knuth, TAOCP vol. 2, algorithm 3.4.2 P).
#pragma once

#include <cstddef>
#include <cstdint>
#include <random>
#include <utility>

namespace k3stats {

class PortableShuffler {
 public:
  explicit PortableShuffler(std::uint64_t seed) : engine_(seed) {}

  // A uniform integer in [0, bound), bound >= 1: draws beyond the largest multiple of bound are
  // rejected so that every value is equally likely.
  std::uint64_t below(std::uint64_t bound) {
    const std::uint64_t limit = UINT64_MAX - UINT64_MAX % bound;
    std::uint64_t x;
    do x = engine_();
    while (x >= limit);
    return x % bound;
  }

  template <class It>
  void shuffle(It first, It last) {
    const auto n = static_cast<std::uint64_t>(last - first);
    for (std::uint64_t i = n; i > 1; --i) std::swap(first[i - 1], first[below(i)]);
  }

 private:
  std::mt19937_64 engine_;
};

}  // namespace k3stats
