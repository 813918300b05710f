// Emulated TCM: the real geometry and hand-off semantics over ordinary aligned memory. Ownership is
// per thread (the owner's tid, like the vendor library), so a thread that exits holding a block
// leaves a stale lock that status() reports, just as on a board.
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <thread>

#include "k3k/aligned_buffer.h"
#include "k3k/tcm.h"

namespace k3k::tcm {

namespace {

int current_tid() {
  return static_cast<int>(::syscall(SYS_gettid));
}

class EmulatedTcm final : public Tcm {
 public:
  explicit EmulatedTcm(const Geometry& g)
      : geometry_(g),
        memory_(g.block_bytes * static_cast<std::size_t>(g.blocks)),
        owners_(static_cast<std::size_t>(g.blocks)),
        maps_(static_cast<std::size_t>(g.blocks)) {}

  Backend backend() const override { return Backend::kEmulated; }
  Geometry geometry() const override { return geometry_; }
  std::string describe() const override {
    return "emulated " + std::to_string(geometry_.blocks) + " x " +
           std::to_string(geometry_.block_bytes / 1024) + " KiB (ordinary memory)";
  }
  std::byte* map(int id) override {
    if (!valid(id)) return nullptr;
    maps_[static_cast<std::size_t>(id)].fetch_add(1, std::memory_order_relaxed);
    return reinterpret_cast<std::byte*>(memory_.data()) +
           static_cast<std::size_t>(id) * geometry_.block_bytes;
  }
  void unmap(int id) override {
    if (valid(id)) maps_[static_cast<std::size_t>(id)].fetch_sub(1, std::memory_order_relaxed);
  }
  bool acquire(int id, std::chrono::microseconds timeout) override {
    if (!valid(id)) return false;
    const int me = current_tid();
    auto& owner = owners_[static_cast<std::size_t>(id)];
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
      int expected = 0;
      if (owner.compare_exchange_strong(expected, me, std::memory_order_acquire)) return true;
      if (expected == me)
        return true;  // re-acquire by the owner (the vendor call is idempotent too)
      if (std::chrono::steady_clock::now() >= deadline) return false;
      std::this_thread::yield();
    }
  }
  void release(int id) override {
    if (!valid(id)) return;
    int me = current_tid();
    owners_[static_cast<std::size_t>(id)].compare_exchange_strong(me, 0, std::memory_order_release);
  }
  BlockStatus status(int id) override {
    BlockStatus s;
    s.id = id;
    if (!valid(id)) return s;
    s.owner_tid = owners_[static_cast<std::size_t>(id)].load(std::memory_order_acquire);
    s.acquired = s.owner_tid != 0;
    s.owner_alive = !s.acquired || thread_alive(s.owner_tid);
    s.cpu_mask = std::uint64_t{1} << ((kFirstA100Cpu + id) & 63);
    return s;
  }
  bool force_release(int id) override {
    if (!valid(id)) return false;
    owners_[static_cast<std::size_t>(id)].store(0, std::memory_order_release);
    return true;
  }

 private:
  bool valid(int id) const { return id >= 0 && id < geometry_.blocks; }
  Geometry geometry_;
  AlignedBuffer<std::uint8_t> memory_;
  std::vector<std::atomic<int>> owners_;
  std::vector<std::atomic<int>> maps_;
};

}  // namespace

std::unique_ptr<Tcm> make_emulated(const Geometry& geometry) {
  if (geometry.blocks <= 0 || geometry.block_bytes == 0) return nullptr;
  return std::make_unique<EmulatedTcm>(geometry);
}

}  // namespace k3k::tcm
