// The C ABI of the vendor library libspine_tcm.so (symbol version SPINE_TCM_0), restated from its
// public header so the project builds without it: ten functions plus a marker symbol that tells a
// loader an instance is already in the process. Only the layout of these two structs and the
// function signatures matter; the test library (tests/tcm/fake_spine_tcm.cpp) implements the same.
#pragma once

#include <cstddef>
#include <cstdint>

extern "C" {

struct spine_tcm_mem_info_t {
  std::size_t blk_size;
  std::size_t blk_num;
  int is_fake_tcm;  // 1: no driver, the library hands out ordinary memory
};

struct spine_tcm_block_info_t {
  int id;
  void* va;
  std::size_t size;
  std::uint64_t phys_addr;
  std::uint64_t cpu_affinity_mask;
  int owner_tid;
  int is_acquired;
};

using spine_tcm_version_fn = const char* (*)();
using spine_tcm_is_available_fn = int (*)();
using spine_tcm_layout_info_fn = int (*)(spine_tcm_mem_info_t*);
using spine_tcm_mem_info_fn = int (*)(int, spine_tcm_block_info_t*);
using spine_tcm_mem_get_fn = void* (*)(int);
using spine_tcm_mem_free_fn = int (*)(int);
// timeout in the library's unit, documented as microseconds (one board report measured ~12 us per
// unit).
using spine_tcm_mem_try_wait_fn = void* (*)(int, std::size_t);
using spine_tcm_mem_release_fn = int (*)(int);
using spine_tcm_mem_force_release_fn = int (*)(int);
using spine_tcm_mem_query_fn = int (*)(int);

}  // extern "C"
