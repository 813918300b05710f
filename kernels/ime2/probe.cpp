// The IME2 layer's CPU probe, built on the CPU facts of k3k/cpu.h and handed to dispatch with the
// layer's microkernels (ime2/layer_ime2.cpp). Linux has no hwcap bit for vendor extensions, so the
// gate identifies the core by its marchid in /proc/cpuinfo (as llama.cpp and IREE do: A100 and
// X100 print identical ISA strings), checks VLEN, and a real build then executes one vmadot under a
// temporary SIGILL handler (once per process, at the first query; the handler is restored right
// after). The gate describes the CPU the calling thread runs on: worker threads must stay on A100
// cores. qemu-user shows the host's /proc/cpuinfo, so emulation runs set K3_IME2_ASSUME_MARCHID.
#include <riscv_vector.h>

#include <csetjmp>
#include <csignal>
#include <cstdio>
#include <cstdlib>

#include "ime2/ime2_insn.h"
#include "k3k/cpu.h"
#include "k3k/ime2.h"

namespace k3k::ime2 {

bool emulated() {
#if defined(K3_IME2_EMULATION)
  return true;
#else
  return false;
#endif
}

namespace {

#if !defined(K3_IME2_EMULATION)
sigjmp_buf g_probe_jump;  // used only inside probe_instruction, under the static-init guard
void on_sigill(int) {
  siglongjmp(g_probe_jump, 1);
}

bool probe_instruction() {
  struct sigaction handler {
  }, previous{};
  handler.sa_handler = on_sigill;
  sigemptyset(&handler.sa_mask);
  if (sigaction(SIGILL, &handler, &previous) != 0) return false;
  bool ok = false;
  if (sigsetjmp(g_probe_jump, 1) == 0) {
    const vuint8m1_t ones = __riscv_vmv_v_x_u8m1(0x11, kRequiredVlenb);
    vint32m2_t c = __riscv_vmv_v_x_i32m2(0, kRequiredVlenb / 2);
    c = vmadot<ElemBits::kInt4, Sign::kUU>(c, ones, ones);
    // 32 products of 1 * 1 per lane: a CPU that decodes the word as something else fails here.
    ok = __riscv_vmv_x_s_i32m2_i32(c) == 32;
  }
  sigaction(SIGILL, &previous, nullptr);
  return ok;
}
#endif

std::string hex(std::uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%016llx", static_cast<unsigned long long>(v));
  return buf;
}

// The marchid check: nullopt on success with `passed` saying where the A100 id came from.
std::optional<std::string> check_marchid(std::string& passed) {
  const std::string a100 = hex(kA100Marchid) + " (A100)";
  if (const char* assumed = std::getenv(kMarchidOverrideEnv)) {
    const auto v = parse_cpuinfo_marchid(std::string("marchid : ") + assumed, -1);
    if (!v) return std::string(kMarchidOverrideEnv) + "='" + assumed + "' is not a number";
    if (*v != kA100Marchid) {
      return "marchid " + hex(*v) + " from the " + kMarchidOverrideEnv + " override is not " + a100;
    }
    passed = "marchid " + a100 + " assumed from the " + kMarchidOverrideEnv +
             " override, /proc/cpuinfo not read";
    return std::nullopt;
  }
  const CpuMarchid m = current_cpu_marchid();
  const auto& v = m.value;
  const std::string& where = m.where;
  if (!v) {
    return "no marchid for " + where + " (not a SpacemiT core; under qemu-user, set " +
           kMarchidOverrideEnv + "=" + hex(kA100Marchid) + " for emulation runs)";
  }
  if (*v != kA100Marchid) return "marchid " + hex(*v) + " of " + where + " is not " + a100;
  passed = "marchid " + a100 + " of " + where;
  return std::nullopt;
}

Gate probe() {
  Gate g;
  const CpuFeatures& cpu = cpu_features();
  if (!cpu.vector) {
    g.refused = "CPU has no RVV (hwcap V unset)";
    return g;
  }
  if (auto why = check_marchid(g.passed)) {
    g.refused = "CPU gate: " + *why;
    return g;
  }
  if (cpu.vlenb != kRequiredVlenb) {
    g.refused =
        "IME2 kernels need VLEN 1024 (vlenb 128), this CPU has vlenb " + std::to_string(cpu.vlenb);
    return g;
  }
  g.passed += ", vlenb 128";
#if !defined(K3_IME2_EMULATION)
  if (!probe_instruction()) {
    g.refused = "IME2 probe instruction (vmadotu i4) is illegal on this CPU";
    return g;
  }
  g.passed += ", probe vmadotu executed";
#endif
  return g;
}

}  // namespace

const Gate& gate() {
  static const Gate g = probe();
  return g;
}

std::optional<std::string> unusable_because() {
  return gate().refused;
}

}  // namespace k3k::ime2
