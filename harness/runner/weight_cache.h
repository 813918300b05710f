// Synthetic W4B64 weights, quantised once per (N, K, seed) and cached on disk.
//
// Generating and HQQ-quantising a weight matrix costs ~0.15 us per weight, which for a decode
// shape is longer than the measurement itself; a sweep starts P fresh processes per cell, so
// without a cache most of a run would be set-up (the harness overhead target is 5%). The data is a
// pure function of (N, K, seed, generator version), so a cached copy is exact.
//
// Location: $K3BENCH_CACHE_DIR, else $XDG_CACHE_HOME/k3bench, else $HOME/.cache/k3bench;
// K3BENCH_CACHE_DIR=off disables it. A damaged or mismatching file is ignored and rewritten;
// writes go to a temporary file renamed into place, so concurrent processes never see half a file.
#pragma once

#include <cstdint>

#include "k3k/w4b64.h"

namespace k3bench {

k3k::W4B64Storage synthetic_w4b64(std::int64_t n, std::int64_t k, std::uint64_t seed);

}  // namespace k3bench
