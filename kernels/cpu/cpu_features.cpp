// hwcap and vlenb (probed once per process) and the calling CPU's marchid from /proc/cpuinfo.
#include <sched.h>

#include <fstream>
#include <sstream>

#include "k3k/cpu.h"

#if defined(__riscv) && defined(__linux__)
#include <sys/auxv.h>
#endif

namespace k3k {

const CpuFeatures& cpu_features() {
  static const CpuFeatures features = [] {
    CpuFeatures f;
#if defined(__riscv) && defined(__linux__)
    // The kernel reports single-letter extensions as hwcap bits; 'V' means RVV 1.0 is enabled
    // for this process (reading vlenb without it would trap).
    const unsigned long hwcap = getauxval(AT_HWCAP);
    f.vector = (hwcap & (1ul << ('V' - 'A'))) != 0;
#if defined(__riscv_vector)
    if (f.vector) {
      unsigned long vlenb = 0;
      asm volatile("csrr %0, vlenb" : "=r"(vlenb));
      f.vlenb = static_cast<int>(vlenb);
    }
#endif
#endif
    return f;
  }();
  return features;
}

CpuMarchid current_cpu_marchid() {
  std::ifstream f("/proc/cpuinfo");
  std::stringstream text;
  text << f.rdbuf();
  const int cpu = sched_getcpu();
  return {parse_cpuinfo_marchid(text.str(), cpu),
          "CPU " + std::to_string(cpu) + " in /proc/cpuinfo"};
}

}  // namespace k3k
