// k3bench --count-marks on an op case (K3BENCH_COUNT_MARKS=1 does the same; `k3tune count` sets it
// and a runner without the feature ignores it): every call of the case in this process, warm-up
// and timed in the order they run, is its own region for the instruction counter (the marker
// system call of model/count_marks.h, seen by scripts/qemu-insn-count): call i (from 0) is region
// 1 + i, everything else (start-up, set-up, the check, the timer and /proc readings, the output)
// region 0. A count of the calls alone is then exact: the process-to-process variation of the
// untimed part no longer enters it. In IME2 emulation builds each call's emulated IME2
// instructions and calls into the software model are read outside the regions and reported per
// call, as the counter needs them to split IME2 from other instructions. So are each call's heap
// allocations where the executable counts them (allocation_count.h): a call that allocates has a
// count that depends on the heap's layout.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include <nlohmann/json.hpp>

namespace k3runner {

class CallMarks {
 public:
  explicit CallMarks(bool enabled) : enabled_(enabled) {}
  bool enabled() const { return enabled_; }
  // Around one call of the case (no effect when disabled, or past the plugin's last region).
  void begin_call(bool timed);
  void end_call();
  // {"syscall": n, "calls": [{"region", "timed", "ime2_instructions", "ime2_calls",
  // "allocations" (where counted)}, ...]};
  // null when disabled.
  nlohmann::json json() const;

  static constexpr int kMaxCalls = 4000;  // region ids stay below the plugin's 4096

 private:
  struct Call {
    int region = 0;
    bool timed = false;
    std::uint64_t ime2_instructions = 0, ime2_calls = 0;
    std::optional<std::uint64_t> allocations;
  };
  bool enabled_;
  bool open_ = false;
  std::vector<Call> calls_;
  std::uint64_t ime2_at_begin_ = 0, ime2_calls_at_begin_ = 0;
  std::optional<std::uint64_t> allocations_at_begin_;
};

}  // namespace k3runner
