#include "tcm/slab_copy.h"

#include <cstdint>
#include <cstring>

#if defined(__riscv_vector)
#include <riscv_vector.h>
#endif

namespace k3k::tcm_detail {

void copy_to_tcm(void* dst, const void* src, std::size_t bytes) {
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

}  // namespace k3k::tcm_detail
