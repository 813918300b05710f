// Kernel paths and the choice among them. The fallback chain is ime2 -> rvv -> generic: a path is
// usable when it is compiled in and the CPU can run it. The choice is made once per call site
// (k3bench, an engine) and passed to the ops in k3k/ops.h, so tests can run any layer on purpose.
#pragma once

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

struct PathDecision {
  KernelPath path = KernelPath::kGeneric;
  std::string reason;  // why this path (for reports)
};

// Whether the layer is in this binary.
bool path_compiled(KernelPath path);
// Best usable path, or `requested` when it is usable; a requested path that is not usable throws
// std::invalid_argument saying why (not compiled in, or the CPU lacks the extension).
PathDecision decide_path(std::optional<KernelPath> requested = std::nullopt);

}  // namespace k3k
