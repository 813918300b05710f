// Shared pieces of the golden-output tests (test_golden_linear.cpp, test_golden_attention.cpp):
// the layers this binary can run, worker pools, seeded data and output hashing.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "k3k/dispatch.h"
#include "k3k/seeded_random.h"
#include "k3k/worker_pool.h"
#include "support/golden.h"
#include "support/layer_sweep.h"

namespace k3test::golden {

// Every layer usable here: the layers the swept tests run (support/layer_sweep.h).
inline std::vector<k3k::KernelPath> usable_layers() {
  return k3test::swept_layers();
}

// Pools of 1, 2 and 3 workers: every output must be the same bytes for each.
inline std::vector<std::unique_ptr<k3k::WorkerPool>>& pools() {
  static std::vector<std::unique_ptr<k3k::WorkerPool>> p = [] {
    std::vector<std::unique_ptr<k3k::WorkerPool>> v;
    for (int workers : {1, 2, 3}) v.push_back(std::make_unique<k3k::WorkerPool>(workers));
    return v;
  }();
  return p;
}

inline std::vector<float> normal_floats(std::size_t n, std::uint64_t seed, double stddev = 1.0) {
  k3k::SeededRandom rng(seed);
  std::vector<float> v(n);
  for (auto& x : v) x = static_cast<float>(rng.normal(0.0, stddev));
  return v;
}

template <typename T>
std::uint64_t hash_of(const std::vector<T>& v, std::uint64_t h = 0xcbf29ce484222325ull) {
  return fnv1a(v.data(), v.size() * sizeof(T), h);
}

// Runs `compute(pool)` (returning the output hash) on every pool, requires one hash for all
// worker counts, and checks it against the golden value of (layer, name).
template <typename Fn>
void check_all_pools(k3k::KernelPath layer, const std::string& name, Fn&& compute) {
  SCOPED_TRACE(name);
  std::uint64_t first = 0;
  for (std::size_t i = 0; i < pools().size(); ++i) {
    const std::uint64_t h = compute(*pools()[i]);
    if (i == 0) {
      first = h;
    } else {
      EXPECT_EQ(h, first) << name << ": output differs with " << pools()[i]->size() << " workers";
    }
  }
  check(config(k3k::to_string(layer)), name, first);
}

}  // namespace k3test::golden
