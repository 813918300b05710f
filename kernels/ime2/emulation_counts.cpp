// The public view (k3k/ime2.h) of the emulation's instruction counters and code range
// (ime2_model.h). Real builds also compile the model (tests and the selftest compare the silicon
// with it) but never count its calls as IME2 instructions, so they report nothing.
#include "ime2/ime2_model.h"
#include "k3k/ime2.h"

namespace k3k::ime2 {

std::vector<InstructionCount> emulated_instruction_counts() {
  std::vector<InstructionCount> counts;
  if (!emulated()) return counts;
  for (int kind = 0; kind < model::kKinds; ++kind) {
    if (const std::uint64_t n = model::executed(kind); n > 0)
      counts.push_back({model::kind_name(kind), n});
  }
  return counts;
}

std::uint64_t emulation_call_instructions() {
#if defined(K3_IME2_EMULATION)
  return model::call_instructions();
#else
  return 0;
#endif
}

void reset_emulated_instruction_counts() {
  model::reset_executed();
#if defined(K3_IME2_EMULATION)
  model::reset_call_instructions();
#endif
}

CodeRange emulation_code_range() {
  if (!emulated()) return {};
  const model::CodeRange r = model::code_range();
  return {r.begin, r.end};
}

}  // namespace k3k::ime2
