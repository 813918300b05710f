// TCM (tightly coupled memory): the K3's software-managed on-chip scratchpad, 8 blocks of 384 KiB,
// block i belonging to A100 CPU 8 + i. One interface, three backends:
//   real      the vendor library libspine_tcm.so, opened with dlopen (never linked), so a binary
//             runs on boards without it. "Fake TCM" (the library's no-driver mode) is refused.
//   emulated  the same geometry and hand-off over ordinary aligned memory, for the host, qemu and
//             boards without the library; the pipeline code runs and is tested everywhere.
//   off       no TCM; kernels take their DRAM path.
// Every result records which backend ran (`Tcm::backend`, `Tcm::describe`).
//
// Two levels of ownership, as in the vendor API: map() is a refcounted mapping of a block (done
// once per worker), acquire()/release() an exclusive hand-off between processes for the duration
// of a kernel. A process killed while holding a block leaves it acquired ("stale lock"): status()
// reports the owner and whether it is alive; force_release() exists for the explicit recovery
// command only and is never called by kernels.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace k3k::tcm {

enum class Backend { kOff, kEmulated, kReal };
const char* to_string(Backend backend);

struct Geometry {
  std::size_t block_bytes = 384 * 1024;
  int blocks = 8;
};

// First A100 CPU on a K3: TCM block id = CPU - kFirstA100Cpu.
inline constexpr int kFirstA100Cpu = 8;
inline int block_for_cpu(int cpu) {
  return cpu - kFirstA100Cpu;
}

struct BlockStatus {
  int id = 0;
  bool acquired = false;
  int owner_tid = 0;        // 0 when not acquired or unknown
  bool owner_alive = true;  // false: acquired by a thread that no longer exists (stale lock)
  std::uint64_t cpu_mask = 0;
  bool stale() const { return acquired && !owner_alive; }
};

class Tcm {
 public:
  virtual ~Tcm() = default;
  virtual Backend backend() const = 0;
  virtual Geometry geometry() const = 0;
  // One line for reports: backend, library version or emulation geometry.
  virtual std::string describe() const = 0;
  // Maps block `id` (refcounted); null on failure. The mapping stays valid until unmap.
  virtual std::byte* map(int id) = 0;
  virtual void unmap(int id) = 0;
  // Exclusive hand-off: waits up to `timeout` for block `id`; false on timeout or error.
  virtual bool acquire(int id, std::chrono::microseconds timeout) = 0;
  virtual void release(int id) = 0;
  virtual BlockStatus status(int id) = 0;
  // Recovery only (an operator's explicit command): clears the hand-off state of block `id`.
  virtual bool force_release(int id) = 0;
};

enum class Mode { kAuto, kReal, kEmulated, kOff };
std::optional<Mode> parse_mode(const std::string& name);

struct OpenOptions {
  Mode mode = Mode::kAuto;
  // dlopen name or path of the vendor library; K3_TCM_LIBRARY in the environment overrides the
  // default.
  std::string library = "libspine_tcm.so";
  Geometry emulated_geometry{};
};

struct Opened {
  std::unique_ptr<Tcm> tcm;  // null only for Mode::kOff or a failed Mode::kReal
  std::string reason;        // why this backend (e.g. "libspine_tcm.so not found: ...; emulated")
};

// kAuto: real when the library loads, reports a real driver and is not fake; else emulated.
// kReal: real or nothing (reason says why). kEmulated, kOff: as named. Never throws.
Opened open(const OpenOptions& options);

// The backends, for tests and tools that want one explicitly.
std::unique_ptr<Tcm> make_emulated(const Geometry& geometry);
// Loads the vendor library; on failure returns null and sets *why.
std::unique_ptr<Tcm> load_spine_library(const std::string& library, std::string* why);

// Blocks acquired by a thread that no longer exists.
std::vector<BlockStatus> stale_blocks(Tcm& tcm);
// Whether a thread id names a live thread on this machine (kill(tid, 0), EPERM counts as alive).
bool thread_alive(int tid);

// Streaming primitives shared by the pipeline and the tcm_bw probe: a vector load/store copy
// (RVV at LMUL 8 on riscv64, memcpy elsewhere; no AI-DMA) and a read of every 64-bit word whose
// XOR fold is returned, so the read cannot be optimised away and its result can be checked.
void stream_copy(void* dst, const void* src, std::size_t bytes);
std::uint64_t stream_read_xor(const void* src, std::size_t bytes);  // bytes: a multiple of 8

// Scoped exclusive hand-off: releases on every exit path.
class BlockLease {
 public:
  BlockLease(Tcm& tcm, int id, std::chrono::microseconds timeout) : tcm_(&tcm), id_(id) {
    held_ = tcm.acquire(id, timeout);
  }
  ~BlockLease() {
    if (held_) tcm_->release(id_);
  }
  BlockLease(const BlockLease&) = delete;
  BlockLease& operator=(const BlockLease&) = delete;
  bool held() const { return held_; }

 private:
  Tcm* tcm_;
  int id_;
  bool held_ = false;
};

}  // namespace k3k::tcm
