// Software prefetch for the streaming kernels (decode Linear weights, attention K/V): Zicbop
// `prefetch.r offset(rs1)`, a read hint that never changes a result and may be dropped by the
// hardware (and is a no-op in qemu). It is the ORI hint `ori x0, rs1, imm` with imm[4:0] = 0b00001
// and the offset in imm[11:5] (RISC-V CMO spec, "Zicbop"); the distro clang-16 does not know the
// extension, so the word is emitted with `.insn i`. Compiled only with K3_ENABLE_ZICBOP (macro
// K3_HAVE_ZICBOP): other builds contain no such word (scripts/check-zicbop-insns.sh, ctest label
// binary).
#pragma once

#include <cstddef>
#include <cstdint>

namespace k3k::detail {

inline constexpr int kCacheLineBytes = 64;

// prefetch.r of the cache line holding p (offset 0 in the encoding: the address is computed).
inline void prefetch_read([[maybe_unused]] const void* p) {
#if defined(K3_HAVE_ZICBOP) && defined(__riscv)
  asm volatile(".insn i 0x13, 6, x0, %0, 1" : : "r"(p));
#endif
}

// Every line of [p, p + bytes).
inline void prefetch_read_range(const void* p, std::size_t bytes) {
  const auto* c = static_cast<const std::uint8_t*>(p);
  for (std::size_t off = 0; off < bytes; off += kCacheLineBytes) prefetch_read(c + off);
}

}  // namespace k3k::detail
