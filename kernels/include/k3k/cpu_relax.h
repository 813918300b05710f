// A spin-wait hint: tells the core that this is a busy-wait loop (x86 `pause`: saves power and
// leaves the sibling hyper-thread the pipeline). Other targets spin on plain loads.
#pragma once

namespace k3k {

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

}  // namespace k3k
