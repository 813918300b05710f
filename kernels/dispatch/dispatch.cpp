#include "k3k/dispatch.h"

#include <stdexcept>

#if defined(__riscv) && defined(__linux__)
#include <sys/auxv.h>
#endif
#if defined(K3_HAVE_IME2)
#include "k3k/ime2.h"
#endif

namespace k3k {

const char* to_string(KernelPath path) {
  switch (path) {
    case KernelPath::kGeneric: return "generic";
    case KernelPath::kRvv: return "rvv";
    case KernelPath::kIme2: return "ime2";
  }
  return "?";
}

std::optional<KernelPath> parse_kernel_path(std::string_view name) {
  if (name == "generic") return KernelPath::kGeneric;
  if (name == "rvv") return KernelPath::kRvv;
  if (name == "ime2") return KernelPath::kIme2;
  return std::nullopt;
}

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

bool path_compiled(KernelPath path) {
  switch (path) {
    case KernelPath::kGeneric: return true;
    case KernelPath::kRvv:
#if defined(K3_HAVE_RVV)
      return true;
#else
      return false;
#endif
    case KernelPath::kIme2:
#if defined(K3_HAVE_IME2)
      return true;
#else
      return false;
#endif
  }
  return false;
}

namespace {
std::optional<std::string> unusable_because(KernelPath path) {
  if (!path_compiled(path)) return std::string(to_string(path)) + " layer not compiled into this binary";
  if (path == KernelPath::kRvv && !cpu_features().vector) return std::string("CPU has no RVV (hwcap V unset)");
#if defined(K3_HAVE_IME2)
  if (path == KernelPath::kIme2) return ime2::unusable_because();
#endif
  return std::nullopt;
}

bool emulated(KernelPath path) {
#if defined(K3_HAVE_IME2)
  return path == KernelPath::kIme2 && ime2::emulated();
#else
  (void)path;
  return false;
#endif
}

// How the gate of the taken path passed; emulated IME2 is correct but not fast: reports must say so.
std::string taken_note(KernelPath path) {
#if defined(K3_HAVE_IME2)
  if (path == KernelPath::kIme2) {
    return " (IME2 gate: " + ime2::gate().passed + (ime2::emulated() ? "; IME2 instructions emulated in software)" : ")");
  }
#endif
  (void)path;
  return "";
}

PathDecision taken(KernelPath path, std::string reason) { return {path, reason + taken_note(path), emulated(path)}; }
}  // namespace

PathDecision decide_path(std::optional<KernelPath> requested) {
  if (requested) {
    if (auto why = unusable_because(*requested)) {
      throw std::invalid_argument("path " + std::string(to_string(*requested)) + " unavailable: " + *why);
    }
    return taken(*requested, "forced");
  }
  std::string skipped;
  for (KernelPath p : {KernelPath::kIme2, KernelPath::kRvv}) {
    if (auto why = unusable_because(p)) {
      skipped += (skipped.empty() ? "" : "; ") + std::string(to_string(p)) + " refused: " + *why;
      continue;
    }
    return taken(p, skipped.empty() ? std::string("best available") : "best available; " + skipped);
  }
  return {KernelPath::kGeneric, "fallback: " + skipped, false};
}

}  // namespace k3k
