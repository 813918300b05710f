// k3bench --model --count-marks: marks where each kernel call of a timed forward begins and ends,
// so that an instruction counter (the qemu-user plugin of scripts/qemu-insn-count, which watches
// for the marker system call) can give a whole prefill or decode step with its per-op breakdown.
//
// The marker is a system call Linux does not have (kCountMarkSyscall: it returns ENOSYS and does
// nothing else, on qemu-user and on a board alike) whose argument is the region now starting:
//   0                                   outside every timed forward (set-up, context fill, checks)
//   region(test, op)                    a kernel call of that op kind within test `test`'s forward
//   region(test, kGlue)                 the forward's own code between its kernel calls
//   region(test, kTimer)                the runner's timer around each kernel call (clock reads,
//                                       sums): an engine does not run it, so a count leaves it out
// Tests are numbered in the order the run starts them. The regions of a test sum to everything its
// timed forward executed. In IME2 emulation builds the emulated IME2 instructions and the calls
// into the software model are read at every marker (in region 0, so the reading is not counted)
// and reported per region in the JSON, as the counter needs them to split IME2 from other
// instructions.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/runner/model/op_timer.h"

namespace k3runner::model {

// Keep in step with scripts/qemu-insn-count/insn_count.c.
inline constexpr long kCountMarkSyscall = 0x4b33;
// Ends the current counted region and starts `region` (0: outside every counted region).
void count_mark(int region);

// The emulated IME2 instructions and the calls into the software model so far (zeros unless an
// IME2 emulation build): read between counted regions.
struct Ime2Totals {
  std::uint64_t instructions = 0, calls = 0;
};
Ime2Totals ime2_emulation_totals();

class CountMarks {
 public:
  static constexpr int kGlue = static_cast<int>(Op::kCount);
  static constexpr int kTimer = kGlue + 1;
  static constexpr int kRegionsPerTest = kTimer + 1;
  static constexpr int kMaxTests = 64;  // region ids stay below the plugin's 4096
  static int region(int test, int slot) { return 1 + test * kRegionsPerTest + slot; }

  // Starts the next test (its index is the number of tests begun before).
  void begin_test(const std::string& name);
  // The timed forward of the current test begins / ends (calls outside are not counted).
  void enter_forward();
  void leave_forward();
  // A kernel call within the forward (no effect outside a forward, e.g. a reset in preparation).
  void enter_op(Op op);
  void leave_op();
  // The timer's work around a call begins / ends (back to the glue).
  void timer(bool begin);

  // {"syscall": n, "regions_per_test": n, "tests": [{"name", "index"}],
  //  "ops": [names by slot, then "glue", "timer"], "ime2": {"<region>": {"instructions", "calls"}}}
  nlohmann::json json() const;

 private:
  void switch_to(int region);

  std::vector<std::string> tests_;
  bool in_forward_ = false;
  int current_ = 0;
  struct Ime2 {
    std::uint64_t instructions = 0, calls = 0;
  };
  std::map<int, Ime2> ime2_;
  Ime2 last_{};
};

}  // namespace k3runner::model
