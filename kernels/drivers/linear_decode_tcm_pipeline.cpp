// Decode Linear through TCM (the pipeline driver; k3k/tcm_linear.h). Slabs (groups of consecutive
// weight tiles) are split into contiguous ranges, one per lane: a lane is a pair of workers
// (pairing on) or a single worker (pairing off, or the odd worker out). Inside a pair the lane's
// slabs alternate between the two roles, and the pair steps through phases t = 0..c (c = the lane's
// slab count):
//   role t % 2       copies slab t of the lane into its own TCM buffer (t < c),
//   role (t - 1) % 2 computes slab t - 1 from its own TCM buffer (t >= 1),
// then both meet at the pair barrier. So one core of a pair streams from DRAM while the partner
// computes. Each worker double-buffers (slab j in buffer (j / 2) % 2), so a slab being computed
// and the next one landing never share bytes. Both roles count the same phases, so uneven slab
// counts, empty lanes, odd worker counts and a single worker cannot deadlock. A worker whose block
// is not handed over in time computes its slabs straight from DRAM (same bytes, same result).
#include <algorithm>
#include <chrono>
#include <optional>
#include <stdexcept>
#include <string>

#include "common/linear_epilogue.h"
#include "drivers/drivers.h"
#include "tcm/pair_barrier.h"
#include "tcm/slab_layout.h"

namespace k3k::driver {

namespace {

using Clock = std::chrono::steady_clock;

struct Lane {
  int first_worker = 0;
  int workers = 1;  // 1 or 2
  std::int64_t slab_begin = 0, slab_end = 0;
};

std::vector<Lane> make_lanes(int workers, bool pairing, std::int64_t slabs) {
  std::vector<Lane> lanes;
  for (int w = 0; w < workers;) {
    const int size = (pairing && w + 1 < workers) ? 2 : 1;
    lanes.push_back({w, size, 0, 0});
    w += size;
  }
  // Contiguous ranges in proportion to each lane's workers.
  int slot = 0;
  for (Lane& lane : lanes) {
    lane.slab_begin = slabs * slot / workers;
    slot += lane.workers;
    lane.slab_end = slabs * slot / workers;
  }
  return lanes;
}

struct WorkerTimes {
  alignas(64) double copy = 0, compute = 0, wait = 0;
  std::int64_t bytes = 0, slabs = 0;
  bool no_block = false;
};

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

}  // namespace

TcmPipelineStats linear_decode_tcm(const ukernel::LinearDecode& uk, const TcmGateDecision& gate,
                                   const PackedActivations& a, const W4B64Packed& w,
                                   const LinearEpilogue& ep, float* out, WorkerPool& pool,
                                   TcmWorkspace& workspace, const TcmDecodeParams& params,
                                   const LinearTiling& tiling) {
  TcmPipelineStats stats;
  detail::validate_linear_args("linear_decode_w4b64 (TCM)", a, w, ep, out, tiling, uk.name,
                               uk.reads(w));
  if (a.layout != ActivationLayout::kRowK256 || a.m != 1) {
    throw std::invalid_argument(
        "linear_decode_w4b64 (TCM): activations must be one row in the K256 (decode) layout");
  }
  const ukernel::BodyPtr<ukernel::DecodeTileBody> body = uk.bind(a, w, {tiling.prefetch_bytes});
  const std::int64_t n = w.n, tiles = w.row_tiles(), rows = w.row_tile;
  if (gate.slab_rows <= 0 || gate.slab_rows % rows != 0) {
    throw std::invalid_argument(
        "linear_decode_w4b64 (TCM): the gate's slab of " + std::to_string(gate.slab_rows) +
        " rows is not a whole number of weight tiles (" + std::to_string(rows) + " rows)");
  }
  const std::int64_t slab_tiles = gate.slab_rows / rows;
  const std::int64_t slabs = (tiles + slab_tiles - 1) / slab_tiles;
  const std::int64_t buffer_bytes = slab_tiles * tcm_detail::tile_slab_bytes(w);
  const int workers = std::min(gate.workers, pool.size());
  const std::vector<Lane> lanes = make_lanes(workers, params.pairing, slabs);
  std::vector<tcm_detail::PairBarrier> barriers(lanes.size());
  std::vector<WorkerTimes> times(static_cast<std::size_t>(workers));
  const float sa = a.scale[0];
  const ukernel::StoreTileFn store = detail::store_tile_of(uk, ep, 1);
  tcm::Tcm& tcm = workspace.tcm();

  auto compute_slab = [&](std::int64_t s, const std::byte* buffer) {
    const std::int64_t t0 = s * slab_tiles, count = std::min(slab_tiles, tiles - t0);
    const tcm_detail::SlabView v =
        buffer != nullptr ? tcm_detail::tcm_slab(w, buffer, count) : tcm_detail::dram_slab(w, t0);
    alignas(64) float acc[detail::kDecodeSpanRows];
    const ukernel::TileStrides at = ukernel::TileStrides::of(w);  // a slab's tiles, as in DRAM
    const std::int64_t span_tiles = detail::kDecodeSpanRows / rows;
    for (std::int64_t i = 0; i < count; i += span_tiles) {
      const std::int64_t tiles = std::min(span_tiles, count - i);
      body->run_tiles(v.codes + i * at.code_bytes, v.pairs + 2 * i * at.pairs, tiles, at, acc);
      const std::int64_t row0 = (t0 + i) * rows;
      store(ep, out, 1, n, 0, 1, row0, std::min(tiles * rows, n - row0), &sa, acc, 0);
    }
  };
  auto copy_slab = [&](std::int64_t s, std::byte* buffer) -> std::int64_t {
    const std::int64_t t0 = s * slab_tiles, count = std::min(slab_tiles, tiles - t0);
    const tcm_detail::SlabView from = tcm_detail::dram_slab(w, t0);
    const tcm_detail::SlabView to = tcm_detail::tcm_slab(w, buffer, count);
    const std::int64_t code_bytes = count * tcm_detail::tile_code_bytes(w);
    const std::int64_t pair_bytes = count * tcm_detail::tile_pair_bytes(w);
    tcm::stream_copy(const_cast<std::uint8_t*>(to.codes), from.codes,
                     static_cast<std::size_t>(code_bytes));
    tcm::stream_copy(const_cast<fp16_t*>(to.pairs), from.pairs,
                     static_cast<std::size_t>(pair_bytes));
    return code_bytes + pair_bytes;
  };

  // A tracer sees every copy, compute and pair wait (k3bench --model --trace); none: no clock reads
  // beyond the pipeline's own.
  WorkerPoolObserver* const observer = pool.observer();
  auto nanos = [](Clock::time_point t) {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
  };
  pool.run_each(workers, [&](int worker) {
    WorkerTimes& my = times[static_cast<std::size_t>(worker)];
    std::size_t lane_index = 0;
    while (lanes[lane_index].first_worker + lanes[lane_index].workers <= worker) ++lane_index;
    const Lane& lane = lanes[lane_index];
    const int role = worker - lane.first_worker;
    // Exclusive use of this worker's block for the call; released on every exit path.
    const int block = workspace.block_of(worker);
    std::optional<tcm::BlockLease> lease;
    if (block >= 0) lease.emplace(tcm, block, std::chrono::microseconds(params.acquire_timeout_us));
    std::byte* memory = (lease && lease->held()) ? workspace.memory_of(worker) : nullptr;
    my.no_block = memory == nullptr;
    std::byte* buffer[2] = {memory, memory != nullptr ? memory + buffer_bytes : nullptr};

    const int lane_id = static_cast<int>(lane_index);
    auto observe = [&](const char* what, std::int64_t item, Clock::time_point t0) {
      if (observer != nullptr) observer->stage(worker, what, item, lane_id, nanos(t0), nanos(Clock::now()));
    };
    auto copy = [&](std::int64_t s, std::int64_t j) {
      if (memory == nullptr) return;
      const auto t0 = Clock::now();
      my.bytes += copy_slab(s, buffer[j / 2 % 2]);
      my.copy += seconds_since(t0);
      observe("tcm_copy", s, t0);
    };
    auto compute = [&](std::int64_t s, std::int64_t j) {
      const auto t0 = Clock::now();
      compute_slab(s, buffer[j / 2 % 2]);
      my.compute += seconds_since(t0);
      ++my.slabs;
      observe("tcm_compute", s, t0);
    };

    const std::int64_t c = lane.slab_end - lane.slab_begin;
    if (lane.workers == 1) {
      for (std::int64_t j = 0; j < c; ++j) {
        copy(lane.slab_begin + j, 2 * j);  // alternate buffers as a pair member would
        compute(lane.slab_begin + j, 2 * j);
      }
      return;
    }
    for (std::int64_t t = 0; t <= c; ++t) {
      if (t < c && t % 2 == role) copy(lane.slab_begin + t, t);
      if (t >= 1 && (t - 1) % 2 == role) compute(lane.slab_begin + t - 1, t - 1);
      const auto t0 = Clock::now();
      barriers[lane_index].arrive_and_wait(role, static_cast<std::uint32_t>(t + 1));
      my.wait += seconds_since(t0);
      observe("pair_wait", t, t0);
    }
  });
  detail::zero_c4_padding(ep, out, 1, n);
  body->finish();

  for (const WorkerTimes& t : times) {
    stats.slabs += t.slabs;
    stats.bytes_copied += t.bytes;
    stats.copy_seconds += t.copy;
    stats.compute_seconds += t.compute;
    stats.wait_seconds += t.wait;
    stats.workers_without_block += t.no_block ? 1 : 0;
  }
  return stats;
}

}  // namespace k3k::driver
