// The k3bench executable's global operator new: the standard's replaceable forms, each counting
// one allocation before it takes memory from malloc (allocation_count.h says why). Deletes free
// what the news took, as the library's own do.
#include <atomic>
#include <cstdlib>
#include <new>

#include "harness/runner/allocation_count.h"

namespace {

std::atomic<std::uint64_t> g_allocations{0};

std::uint64_t read_allocations() {
  return g_allocations.load(std::memory_order_relaxed);
}

void* allocate(std::size_t bytes, std::size_t align) noexcept {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  if (bytes == 0) bytes = 1;
  if (align <= alignof(std::max_align_t)) return std::malloc(bytes);
  return std::aligned_alloc(align, (bytes + align - 1) / align * align);
}

void* allocate_or_throw(std::size_t bytes, std::size_t align) {
  for (;;) {
    if (void* p = allocate(bytes, align)) return p;
    std::new_handler handler = std::get_new_handler();
    if (handler == nullptr) throw std::bad_alloc();
    handler();
  }
}

[[maybe_unused]] const bool g_installed = [] {
  k3runner::detail::install_allocation_counter(&read_allocations);
  return true;
}();

}  // namespace

void* operator new(std::size_t n) {
  return allocate_or_throw(n, 0);
}
void* operator new[](std::size_t n) {
  return allocate_or_throw(n, 0);
}
void* operator new(std::size_t n, std::align_val_t a) {
  return allocate_or_throw(n, static_cast<std::size_t>(a));
}
void* operator new[](std::size_t n, std::align_val_t a) {
  return allocate_or_throw(n, static_cast<std::size_t>(a));
}
void* operator new(std::size_t n, const std::nothrow_t&) noexcept {
  return allocate(n, 0);
}
void* operator new[](std::size_t n, const std::nothrow_t&) noexcept {
  return allocate(n, 0);
}
void* operator new(std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
  return allocate(n, static_cast<std::size_t>(a));
}
void* operator new[](std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
  return allocate(n, static_cast<std::size_t>(a));
}

void operator delete(void* p) noexcept {
  std::free(p);
}
void operator delete[](void* p) noexcept {
  std::free(p);
}
void operator delete(void* p, std::size_t) noexcept {
  std::free(p);
}
void operator delete[](void* p, std::size_t) noexcept {
  std::free(p);
}
void operator delete(void* p, std::align_val_t) noexcept {
  std::free(p);
}
void operator delete[](void* p, std::align_val_t) noexcept {
  std::free(p);
}
void operator delete(void* p, std::size_t, std::align_val_t) noexcept {
  std::free(p);
}
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept {
  std::free(p);
}
void operator delete(void* p, const std::nothrow_t&) noexcept {
  std::free(p);
}
void operator delete[](void* p, const std::nothrow_t&) noexcept {
  std::free(p);
}
void operator delete(void* p, std::align_val_t, const std::nothrow_t&) noexcept {
  std::free(p);
}
void operator delete[](void* p, std::align_val_t, const std::nothrow_t&) noexcept {
  std::free(p);
}
