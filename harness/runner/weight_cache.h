// Synthetic W4B64 weights, quantised once per (N, K, seed) and cached on disk, in two forms: the
// storage form (MNN layout; what the accuracy check and --dump read) and the packed kernel layout
// a Linear case times (rowtile32, or IME2's), so the P processes of a sweep neither re-quantise nor
// re-pack: a process reads the packed bytes straight into the buffer it times.
//
// Generating and HQQ-quantising a weight matrix costs ~0.15 us per weight, longer than the
// measurement itself for a decode shape; a sweep starts P fresh processes per cell, so without the
// cache most of a run would be set-up (the harness overhead target is 5%). The data is a pure
// function of (N, K, seed, generator version, layout), so a cached copy is exact.
//
// Location: $K3BENCH_CACHE_DIR, else $XDG_CACHE_HOME/k3bench, else $HOME/.cache/k3bench;
// K3BENCH_CACHE_DIR=off disables it. A damaged or mismatching file is ignored and rewritten;
// writes go to a temporary file renamed into place, so concurrent processes never see half a file.
// Decode benchmarks rotate among copies of the weights larger than the last-level cache in all
// (so each call reads DRAM); making those copies in every process cost ~0.2 s of set-up per process
// (64 MiB written and page-faulted), most of a sweep's overhead. The rotation file holds the copies
// once, on disk: with weight_load = mmap a process maps it read-only and times page-cache pages
// shared by every process of the sweep (as an engine that maps its model file does), set-up a few
// milliseconds; with read, each process makes its own copies in anonymous (huge-page) memory.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "harness/runner/model/model_weights.h"
#include "k3k/w4b64.h"

namespace k3runner {

// A whole model's synthetic weights (model::make_synthetic_weights), cached the same way in one
// file per model shapes, seed, packing (layouts and rows per tile of this CPU) and generator
// version: generated once, then every array a view into one image of that file, mapped
// (weight_load = mmap) or read into one buffer (read). Generating Qwen3-0.6B's under qemu-user is
// ~93G instructions, most of a whole-model count's wall time; the weights are the same bits
// either way.
model::ModelWeights cached_model_weights(const k3model::ModelConfig& config,
                                         const model::WeightOptions& options, k3k::KernelPath path,
                                         k3k::WorkerPool& pool);

k3k::W4B64Storage synthetic_w4b64(std::int64_t n, std::int64_t k, std::uint64_t seed);

// Seconds this process spent filling the cache (generating, quantising, packing and writing what
// was not there yet): a cold cache's one-time cost, which the harness reports apart from the
// per-process overhead a warm cache leaves.
double weight_cache_build_s();

// The packed weights in `layout`; `repack` turns rowtile32 weights into that layout (identity for
// kRowTile32). Cached per layout and rows per tile.
k3k::W4B64Packed synthetic_w4b64_packed(
    std::int64_t n, std::int64_t k, std::uint64_t seed, k3k::W4B64Layout layout, int row_tile,
    const std::function<k3k::W4B64Packed(k3k::W4B64Packed)>& repack);

// `copies` distinct copies of the packed weights in `layout`, mapped read-only from the rotation
// file (made from the packed cache on first use). Empty when there is no cache directory or the
// file cannot be made: the caller then makes its copies in memory.
std::vector<k3k::W4B64Packed> synthetic_w4b64_rotation(
    std::int64_t n, std::int64_t k, std::uint64_t seed, k3k::W4B64Layout layout, int row_tile,
    std::int64_t copies, const std::function<k3k::W4B64Packed(k3k::W4B64Packed)>& repack);

}  // namespace k3runner
