// What the CPU offers, probed once per process: RVV (riscv64 hwcap 'V'), vlenb, and the core's
// marchid (Linux has no hwcap bit for vendor extensions, so SpacemiT cores are told apart by the
// marchid in /proc/cpuinfo). The one place that reads hwcap, vlenb and cpuinfo; layers build their
// gates (kernels/dispatch) on these facts.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace k3k {

struct CpuFeatures {
  bool vector = false;  // RVV 1.0 usable (riscv64 hwcap 'V')
  int vlenb = 0;        // bytes per vector register, 0 without V
};
const CpuFeatures& cpu_features();

// The `marchid` of logical CPU `cpu` in /proc/cpuinfo text (the value on a "marchid : 0x..." line
// inside the block that starts with "processor : <cpu>"); with cpu < 0, the first marchid in the
// text. nullopt when there is none or it is not a number.
std::optional<std::uint64_t> parse_cpuinfo_marchid(std::string_view cpuinfo, int cpu);

struct CpuMarchid {
  std::optional<std::uint64_t> value;  // nullopt: no marchid for this CPU in /proc/cpuinfo
  std::string where;                   // "CPU <n> in /proc/cpuinfo"
};
// The marchid of the CPU the calling thread runs on, read from /proc/cpuinfo now.
CpuMarchid current_cpu_marchid();

}  // namespace k3k
