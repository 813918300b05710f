// The streaming primitives of k3k/tcm.h. On riscv64 with RVV they use LMUL 8 (the widest group: one
// load/store pair moves 8 registers, 1 KiB at VLEN 1024), so the copy loop is bound by memory,
// not by instruction issue; elsewhere memcpy and a plain loop the compiler vectorises.
#include <cstdint>
#include <cstring>

#include "k3k/tcm.h"

#if defined(__riscv_vector)
#include <riscv_vector.h>
#endif

namespace k3k::tcm {

void stream_copy(void* dst, const void* src, std::size_t bytes) {
#if defined(__riscv_vector)
  auto* d = static_cast<std::uint8_t*>(dst);
  const auto* s = static_cast<const std::uint8_t*>(src);
  while (bytes > 0) {
    const std::size_t vl = __riscv_vsetvl_e8m8(bytes);
    __riscv_vse8_v_u8m8(d, __riscv_vle8_v_u8m8(s, vl), vl);
    d += vl;
    s += vl;
    bytes -= vl;
  }
#else
  std::memcpy(dst, src, bytes);
#endif
}

std::uint64_t stream_read_xor(const void* src, std::size_t bytes) {
  const auto* p = static_cast<const std::uint64_t*>(src);
  std::size_t words = bytes / 8;
#if defined(__riscv_vector)
  const std::size_t vlmax = __riscv_vsetvlmax_e64m8();
  vuint64m8_t acc = __riscv_vmv_v_x_u64m8(0, vlmax);
  while (words > 0) {
    const std::size_t vl = __riscv_vsetvl_e64m8(words);
    acc = __riscv_vxor_vv_u64m8_tu(acc, acc, __riscv_vle64_v_u64m8(p, vl), vl);
    p += vl;
    words -= vl;
  }
  return __riscv_vmv_x_s_u64m1_u64(
      __riscv_vredxor_vs_u64m8_u64m1(acc, __riscv_vmv_v_x_u64m1(0, 1), vlmax));
#else
  std::uint64_t acc[4] = {};
  std::size_t i = 0;
  for (; i + 4 <= words; i += 4)
    for (int l = 0; l < 4; ++l) acc[l] ^= p[i + static_cast<std::size_t>(l)];
  for (; i < words; ++i) acc[0] ^= p[i];
  return acc[0] ^ acc[1] ^ acc[2] ^ acc[3];
#endif
}

}  // namespace k3k::tcm
