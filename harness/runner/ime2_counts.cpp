#include "harness/runner/ime2_counts.h"

#include <fmt/format.h>

#if defined(K3_HAVE_IME2)
#include "k3k/ime2.h"
#endif

namespace k3runner {

nlohmann::json ime2_instruction_counts_json() {
#if defined(K3_HAVE_IME2)
  if (!k3k::ime2::emulated()) return nullptr;
  nlohmann::json by = nlohmann::json::object();
  std::uint64_t total = 0;
  for (const auto& c : k3k::ime2::emulated_instruction_counts()) {
    by[c.instruction] = c.count;
    total += c.count;
  }
  const auto range = k3k::ime2::emulation_code_range();
  return {{"total", total},
          {"by_instruction", by},
          {"call_instructions", k3k::ime2::emulation_call_instructions()},
          {"model_code", {fmt::format("{:#x}", range.begin), fmt::format("{:#x}", range.end)}}};
#else
  return nullptr;
#endif
}

}  // namespace k3runner
