#include "harness/runner/call_marks.h"

#include "harness/runner/allocation_count.h"
#include "harness/runner/model/count_marks.h"

namespace k3runner {

void CallMarks::begin_call(bool timed) {
  if (!enabled_ || open_ || static_cast<int>(calls_.size()) == kMaxCalls) return;
  const model::Ime2Totals t =
      model::ime2_emulation_totals();  // read in region 0: not part of the call
  ime2_at_begin_ = t.instructions;
  ime2_calls_at_begin_ = t.calls;
  calls_.push_back({static_cast<int>(calls_.size()) + 1, timed, 0, 0, std::nullopt});
  open_ = true;
  allocations_at_begin_ = heap_allocations();
  model::count_mark(calls_.back().region);
}

void CallMarks::end_call() {
  if (!open_) return;
  model::count_mark(0);
  open_ = false;
  if (const auto now = heap_allocations(); now && allocations_at_begin_)
    calls_.back().allocations = *now - *allocations_at_begin_;
  const model::Ime2Totals t = model::ime2_emulation_totals();
  calls_.back().ime2_instructions = t.instructions - ime2_at_begin_;
  calls_.back().ime2_calls = t.calls - ime2_calls_at_begin_;
}

nlohmann::json CallMarks::json() const {
  if (!enabled_) return nullptr;
  nlohmann::json calls = nlohmann::json::array();
  for (const Call& c : calls_) {
    nlohmann::json call = {{"region", c.region},
                           {"timed", c.timed},
                           {"ime2_instructions", c.ime2_instructions},
                           {"ime2_calls", c.ime2_calls}};
    if (c.allocations) call["allocations"] = *c.allocations;
    calls.push_back(std::move(call));
  }
  return {{"syscall", model::kCountMarkSyscall}, {"calls", calls}};
}

}  // namespace k3runner
