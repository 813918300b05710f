#include "harness/runner/extra_work.h"

#include "harness/runner/alternation.h"

#include <algorithm>
#include <chrono>
#include <cmath>

namespace k3runner {
namespace {

// A dependent multiply-add chain the compiler cannot shorten: each step needs the previous one.
std::uint64_t spin(std::uint64_t n) {
  std::uint64_t x = 0x9E3779B97F4A7C15ull;
  for (std::uint64_t i = 0; i < n; ++i) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    asm volatile("" : "+r"(x));  // keeps the loop from being folded into a closed form
  }
  return x;
}

// Minimum over several trials of the time per spin: the minimum is the least disturbed estimate.
double calibrate_ns_per_spin() {
  constexpr std::uint64_t kSpins = 1u << 20;
  double best = 1e300;
  for (int trial = 0; trial < 7; ++trial) {
    const auto t0 = std::chrono::steady_clock::now();
    volatile std::uint64_t sink = spin(kSpins);
    (void)sink;
    const auto t1 = std::chrono::steady_clock::now();
    best = std::min(best, std::chrono::duration<double, std::nano>(t1 - t0).count() / kSpins);
  }
  return best;
}

}  // namespace

ExtraWork::ExtraWork(double ns, std::uint64_t spins, bool alternate)
    : requested_ns_(std::max(0.0, ns)), alternate_(alternate) {
  if (spins > 0) {
    spins_ = spins;
    return;
  }
  if (requested_ns_ <= 0) return;
  ns_per_spin_ = calibrate_ns_per_spin();
  spins_ = static_cast<std::uint64_t>(std::llround(requested_ns_ / ns_per_spin_));
}

char ExtraWork::side(int rep) const {
  return alternate_ ? abba_side(rep) : 0;
}

void ExtraWork::run() const {
  volatile std::uint64_t sink = spin(spins_);
  (void)sink;
}

nlohmann::json ExtraWork::to_json() const {
  if (!enabled() && !alternate_) return nullptr;
  return {{"requested_ns", requested_ns_},
          {"ns_per_spin", ns_per_spin_},
          {"spins", spins_},
          {"sides", alternate_ ? "abba" : "all"}};
}

}  // namespace k3runner
