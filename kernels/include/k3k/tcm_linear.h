// Decode ("M1") W4B64 Linear through TCM: worker pairs stream packed-weight slabs from DRAM into
// their TCM blocks and compute from there, staggered so that one core of a pair copies while its
// partner computes (the two cores of a K3 pair share IME2 and TCM resources). Whether this beats
// reading the weights straight from DRAM depends on the board, the shape and the worker count, so
// every threshold is a parameter that the tuner re-decides, and the gate explains its decision.
//
// The pipeline is a driver of k3k::linear_decode_w4b64 (k3k/linear.h), chosen through its
// LinearDecodeOptions. Results are bitwise identical to the DRAM driver on the same layer (generic,
// rvv, ime2): both run the layer's decode tile microkernel (kernels/ukernels/linear.h) on the same
// bytes, only the address the weights are read from differs.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "k3k/dispatch.h"
#include "k3k/tcm.h"
#include "k3k/w4b64.h"
#include "k3k/worker_pool.h"

namespace k3k {

// Each worker's TCM block, mapped from inside the worker's own thread (the vendor library records
// the mapping thread; on a K3 the block is the one of the worker's A100 CPU, block = CPU - 8).
class TcmWorkspace {
 public:
  TcmWorkspace(tcm::Tcm& tcm, WorkerPool& pool);
  ~TcmWorkspace();
  TcmWorkspace(const TcmWorkspace&) = delete;
  TcmWorkspace& operator=(const TcmWorkspace&) = delete;

  tcm::Tcm& tcm() const { return *tcm_; }
  // Block id of a worker, or -1 when it has none (more workers than blocks, a duplicate CPU, a
  // failed map).
  int block_of(int worker) const { return block_[static_cast<std::size_t>(worker)]; }
  std::byte* memory_of(int worker) const { return memory_[static_cast<std::size_t>(worker)]; }
  // Workers whose block is mapped and not held by another live owner right now.
  int usable_blocks() const;
  std::string describe() const;

 private:
  tcm::Tcm* tcm_;
  WorkerPool* pool_;
  std::vector<int> block_;
  std::vector<std::byte*> memory_;
};

enum class TcmUse { kOff, kOn, kAuto };  // on: skip the size thresholds (for measuring both sides)

struct TcmDecodeParams {
  TcmUse use = TcmUse::kAuto;
  std::int64_t k_min = 2048;     // K below this: DRAM path (copy + sync cost more than they save)
  std::int64_t b_min = 2 << 20;  // packed-weight bytes below this: DRAM path (fits in L2 anyway)
  int compute_workers = 6;       // pipeline workers (capped by the pool and the usable blocks)
  int slab_rows = 0;             // weight rows per slab, a multiple of 32; 0: the largest that fits
  bool pairing = true;  // stagger pairs (copy while the partner computes) or run each worker alone
  bool table_disables = false;  // a loaded tuning table turned the pipeline off for this shape
  bool auto_allows_emulated =
      false;  // auto normally needs real TCM blocks (emulated ones are plain DRAM)
  std::int64_t acquire_timeout_us =
      1000;  // per call, per worker; a block not handed over in time -> DRAM for that worker
};

struct TcmGateDecision {
  bool use_tcm = false;
  std::string reason;
  int slab_rows = 0;
  int workers = 0;
};

// All must hold: the parameters allow it, K >= k_min, packed bytes >= b_min and the blocks are real
// TCM (these three unless use == on), two slab buffers fit one block, and >= 2 usable blocks.
TcmGateDecision decide_tcm_decode(KernelPath path, const W4B64Packed& w,
                                  const TcmWorkspace* workspace, const TcmDecodeParams& params,
                                  int pool_size);

struct TcmPipelineStats {
  std::int64_t slabs = 0;
  std::int64_t bytes_copied = 0;
  double copy_seconds = 0;        // summed over workers
  double compute_seconds = 0;     // summed over workers
  double wait_seconds = 0;        // pair-barrier waits, summed over workers
  int workers_without_block = 0;  // acquire timed out: those workers computed from DRAM
};

}  // namespace k3k
