// Copying a weight slab from DRAM into TCM. On riscv64 with RVV it is a vector load/store loop at
// LMUL 8 (the widest stream a single instruction pair moves; AI-DMA is not used), elsewhere memcpy.
#pragma once

#include <cstddef>

namespace k3k::tcm_detail {
void copy_to_tcm(void* dst, const void* src, std::size_t bytes);
}
