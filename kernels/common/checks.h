// Helpers every driver and layer shares: argument-message formatting and the memory-layout
// predicates the checks and scratch layouts use. Not part of the public API.
#pragma once

#include <cstddef>
#include <cstdint>
#include <sstream>
#include <stdexcept>
#include <string>

namespace k3k::detail {

// Floats per worker-scratch region rounded up to a whole number of 64-byte lines, so that the
// regions of different workers never share a cache line.
inline std::int64_t scratch_stride(std::int64_t floats) {
  return (floats + 15) / 16 * 16;
}

// True when out and in share memory without being the same span (in-place use passes the same
// span).
inline bool partially_overlap(const float* in, std::size_t in_size, const float* out,
                              std::size_t out_size) {
  if (in == out) return false;
  return in < out + out_size && out < in + in_size;
}

template <typename... Args>
std::string message(const Args&... args) {
  std::ostringstream os;
  (os << ... << args);
  return os.str();
}

// Throws std::invalid_argument with the concatenated arguments (the op name first, by convention).
template <typename... Args>
[[noreturn]] void fail(const Args&... args) {
  throw std::invalid_argument(message(args...));
}

}  // namespace k3k::detail
