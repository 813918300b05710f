// Kernel paths and the choice among them. The fallback chain is ime2 -> rvv -> generic: a path is
// usable when it is compiled in and the CPU can run it (the layer's probe over k3k/cpu.h). The
// choice is made once per call site (k3bench, an engine) and passed as the first argument of every
// op (k3k/quantize.h, linear.h, embedding.h, attention.h, kv_cache.h, small_ops.h), so tests can
// run any layer on purpose.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "k3k/cpu.h"

namespace k3k {

enum class KernelPath { kGeneric, kRvv, kIme2 };

const char* to_string(KernelPath path);
std::optional<KernelPath> parse_kernel_path(std::string_view name);

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
