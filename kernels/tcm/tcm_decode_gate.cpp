#include <algorithm>

#include "k3k/tcm_linear.h"
#include "tcm/slab_layout.h"

namespace k3k {

namespace {
std::string kib(std::int64_t bytes) {
  return std::to_string(bytes / 1024) + " KiB";
}
}  // namespace

TcmGateDecision decide_tcm_decode(KernelPath /*path: every layer has a tile body*/,
                                  const W4B64Packed& w, const TcmWorkspace* workspace,
                                  const TcmDecodeParams& params, int pool_size) {
  TcmGateDecision d;
  auto off = [&](std::string why) {
    d.use_tcm = false;
    d.reason = std::move(why);
    return d;
  };
  if (params.use == TcmUse::kOff) return off("tcm=off");
  if (params.table_disables)
    return off("the tuning table disables the TCM pipeline for this shape");
  if (workspace == nullptr) return off("no TCM backend");
  if (params.use == TcmUse::kAuto) {
    if (workspace->tcm().backend() != tcm::Backend::kReal && !params.auto_allows_emulated) {
      return off(
          "TCM is emulated (ordinary memory): auto takes the pipeline only on real TCM (tcm=on "
          "measures it)");
    }
    if (w.k < params.k_min)
      return off("K " + std::to_string(w.k) + " < k_min " + std::to_string(params.k_min));
    if (w.bytes() < params.b_min) {
      return off("packed weights " + kib(w.bytes()) + " < b_min " + kib(params.b_min));
    }
  }
  const std::int64_t tile_bytes = tcm_detail::tile_slab_bytes(w);
  const std::int64_t block_bytes =
      static_cast<std::int64_t>(workspace->tcm().geometry().block_bytes);
  const std::int64_t fit_tiles = block_bytes / (2 * tile_bytes);  // two slab buffers per block
  if (fit_tiles < 1) {
    return off("two " + std::to_string(w.row_tile) + "-row slabs (" + kib(2 * tile_bytes) +
               ") exceed a TCM block (" + kib(block_bytes) + ")");
  }
  d.workers = std::max(1, std::min(params.compute_workers, pool_size));
  int usable = 0;
  for (int wk = 0; wk < d.workers; ++wk) usable += workspace->block_of(wk) >= 0 ? 1 : 0;
  usable = std::min(usable, workspace->usable_blocks());
  if (usable < 2)
    return off("only " + std::to_string(usable) +
               " usable TCM block(s) for the pipeline workers, need 2");
  std::int64_t slab_tiles;
  if (params.slab_rows > 0) {
    if (params.slab_rows % w.row_tile != 0) {
      return off("slab_rows " + std::to_string(params.slab_rows) + " is not a multiple of the " +
                 std::to_string(w.row_tile) + " rows per weight tile");
    }
    slab_tiles = params.slab_rows / w.row_tile;
    if (slab_tiles > fit_tiles) {
      return off("slab_rows " + std::to_string(params.slab_rows) + " needs 2 x " +
                 kib(slab_tiles * tile_bytes) + " > a TCM block (" + kib(block_bytes) + ")");
    }
  } else {
    // Largest that fits, but leave each worker at least two slabs so the pair can alternate.
    slab_tiles = std::clamp<std::int64_t>(w.row_tiles() / (2 * d.workers), 1, fit_tiles);
  }
  d.slab_rows = static_cast<int>(slab_tiles * w.row_tile);
  d.use_tcm = true;
  d.reason = std::string(params.use == TcmUse::kOn ? "tcm=on" : "gates passed") + ": K " +
             std::to_string(w.k) + ", weights " + kib(w.bytes()) + ", " + std::to_string(usable) +
             " blocks, slab " + std::to_string(d.slab_rows) + " rows (" +
             kib(slab_tiles * tile_bytes) + ")";
  return d;
}

}  // namespace k3k
