// Calibrated extra work, added after every timed call when --extra-work-ns is given. It lets
// `k3tune selfcheck stats` slow a configuration by a known amount and measure whether the A/B test
// detects it. The work is a dependent integer chain (not a clock wait), so, like real kernel work,
// it scales with core frequency; its length in spins is calibrated once at start-up. A fixed
// number of spins (--extra-work-spins) is planted instead where instructions are counted: a
// calibration is a timing, and under qemu on a loaded machine it varied the planted work's
// instruction count by more than the work itself.
//
// Alternating (--extra-work-sides abba): the repetitions of one process are the two sides of a
// comparison, A without the work and B with it, in pairs A B, B A, A B, ... (the order alternates
// so that a drift within the process cancels). Each repetition reports its side, also when no
// work is planted (the A-vs-A comparison). The spread between processes, which dominates on a
// shared machine, is then common to both sides of every pair.
#pragma once

#include <cstdint>

#include <nlohmann/json.hpp>

namespace k3runner {

class ExtraWork {
 public:
  // ns <= 0 and spins == 0: no extra work (run() is never called by measure()). spins > 0: exactly
  // that many spins per call, no calibration.
  explicit ExtraWork(double ns, std::uint64_t spins = 0, bool alternate = false);
  bool enabled() const { return spins_ > 0; }
  bool alternating() const { return alternate_; }
  // Whether repetition `rep` (0-based) gets the work: every one, or only side B when alternating.
  bool in_repetition(int rep) const { return enabled() && (!alternate_ || side(rep) == 'B'); }
  // 'A' or 'B' when alternating (repetitions 0 1 | 2 3 | 4 5 ... are A B | B A | A B ...), else 0.
  char side(int rep) const;
  void run() const;
  nlohmann::json to_json() const;  // requested ns, calibrated ns per spin, spins per call

 private:
  double requested_ns_ = 0;
  double ns_per_spin_ = 0;
  std::uint64_t spins_ = 0;
  bool alternate_ = false;
};

}  // namespace k3runner
