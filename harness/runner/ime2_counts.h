// The emulated IME2 instruction counts of this process as k3bench JSON (null unless the binary is
// an IME2 emulation build): {"total": n, "by_instruction": {"vmadotu i4": n, ...},
// "call_instructions": n, "model_code": ["0x...", "0x..."]} -- counts since process start (setup, check and every timed
// call), so per-call figures come from two runs that differ only in --iterations; model_code is
// the address range an instruction counter skips (the software model); call_instructions are the
// calls of the model, which such a counter still sees and a real build does not execute.
#pragma once

#include <nlohmann/json.hpp>

namespace k3runner {

nlohmann::json ime2_instruction_counts_json();

}  // namespace k3runner
