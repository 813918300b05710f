// Whether the IME2 kernels can run here. Hardware has no hwcap bit for vendor extensions, so a real
// build executes one vmadot under a temporary SIGILL handler (once per process, at the first
// query; the handler is restored right after). X100 cores (VLEN 256) fail the vlenb gate first.
// The probe describes the CPU the calling thread runs on: worker threads must stay on A100 cores.
#include <riscv_vector.h>

#include <csetjmp>
#include <csignal>

#include "ime2/ime2_insn.h"
#include "k3k/dispatch.h"
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
void on_sigill(int) { siglongjmp(g_probe_jump, 1); }

bool probe_instruction() {
  struct sigaction handler {}, previous {};
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

std::optional<std::string> probe() {
  const CpuFeatures& cpu = cpu_features();
  if (!cpu.vector) return std::string("CPU has no RVV (hwcap V unset)");
  if (cpu.vlenb != kRequiredVlenb) {
    return "IME2 kernels need VLEN 1024 (vlenb 128), this CPU has vlenb " + std::to_string(cpu.vlenb);
  }
#if !defined(K3_IME2_EMULATION)
  if (!probe_instruction()) return std::string("IME2 probe instruction (vmadotu i4) is illegal on this CPU");
#endif
  return std::nullopt;
}

}  // namespace

std::optional<std::string> unusable_because() {
  static const std::optional<std::string> why = probe();
  return why;
}

}  // namespace k3k::ime2
