#include "harness/runner/allocation_count.h"

namespace k3runner {

namespace {
std::uint64_t (*g_read)() = nullptr;
}  // namespace

std::optional<std::uint64_t> heap_allocations() {
  if (g_read == nullptr) return std::nullopt;
  return g_read();
}

void detail::install_allocation_counter(std::uint64_t (*read)()) {
  g_read = read;
}

}  // namespace k3runner
