// Phase barrier between the two workers of a pair. Each worker publishes the number of phases it
// has finished and waits until its partner has finished as many. Phases last tens of microseconds
// and a futex wake-up costs about as much (measured: with a short spin the pair spent longer
// waiting than working), so it spins with the pause hint first and parks in atomic::wait only
// after that, so an oversubscribed host still makes progress.
#pragma once

#include <atomic>
#include <cstdint>

#include "k3k/cpu_relax.h"

namespace k3k::tcm_detail {

class PairBarrier {
 public:
  void arrive_and_wait(int role, std::uint32_t phases_done) {
    done_[role].value.store(phases_done, std::memory_order_release);
    done_[role].value.notify_one();
    auto& other = done_[role ^ 1].value;
    std::uint32_t seen = other.load(std::memory_order_acquire);
    for (int spins = 0; seen < phases_done; ++spins) {
      if (spins < kSpins) {
        cpu_relax();
      } else {
        other.wait(seen, std::memory_order_acquire);
      }
      seen = other.load(std::memory_order_acquire);
    }
  }

 private:
  static constexpr int kSpins = 1 << 14;
  struct alignas(64) Slot {
    std::atomic<std::uint32_t> value{0};
  };
  Slot done_[2];
};

}  // namespace k3k::tcm_detail
