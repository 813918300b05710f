// Kernel paths and the choice among them. The fallback chain is ime2 -> rvv -> generic: a path is
// usable when it is compiled in and the CPU can run it. The choice is made once per call site
// (k3bench, an engine) and passed to the ops in k3k/ops.h, so tests can run any layer on purpose.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace k3k {

enum class KernelPath { kGeneric, kRvv, kIme2 };

const char* to_string(KernelPath path);
std::optional<KernelPath> parse_kernel_path(std::string_view name);

struct CpuFeatures {
  bool vector = false;  // RVV 1.0 usable (riscv64 hwcap 'V')
  int vlenb = 0;        // bytes per vector register, 0 without V
};
const CpuFeatures& cpu_features();

// The `marchid` of logical CPU `cpu` in /proc/cpuinfo text (the value on a "marchid : 0x..." line
// inside the block that starts with "processor : <cpu>"); with cpu < 0, the first marchid in the
// text. nullopt when there is none or it is not a number. Linux has no hwcap bit for vendor
// extensions, so this is how SpacemiT cores are told apart (A100 vs X100, see k3k/ime2.h).
std::optional<std::uint64_t> parse_cpuinfo_marchid(std::string_view cpuinfo, int cpu);

struct PathDecision {
  KernelPath path = KernelPath::kGeneric;
  std::string reason;     // why this path (for reports), including why faster paths were refused
  bool emulated = false;  // the path's instructions run as software models: timings are meaningless
};

// Whether the layer is in this binary.
bool path_compiled(KernelPath path);
// Best usable path, or `requested` when it is usable; a requested path that is not usable throws
// std::invalid_argument saying why (not compiled in, or the CPU lacks the extension).
PathDecision decide_path(std::optional<KernelPath> requested = std::nullopt);

}  // namespace k3k
