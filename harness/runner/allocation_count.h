// How many heap allocations a call of a case made. Every kernel buffer, vector, unique_ptr and
// shared_ptr control block goes through operator new (AlignedBuffer's deleter is held by one), so
// the k3bench executable replaces the global operator new (operator_new_count.cpp) to count them.
// A kernel call that allocates has an instruction count that depends on the heap's layout, which
// depends on everything the process did before, down to the length of its own path: `k3tune count`
// reports a call's allocations so such a count is never taken for a regression.
#pragma once

#include <cstdint>
#include <optional>

namespace k3runner {

// Allocations so far in this process; nullopt where operator new is not the counting one (the
// runner's libraries linked into a test or a kernel plugin).
std::optional<std::uint64_t> heap_allocations();

namespace detail {
// Set by operator_new_count.cpp before main.
void install_allocation_counter(std::uint64_t (*read)());
}  // namespace detail

}  // namespace k3runner
