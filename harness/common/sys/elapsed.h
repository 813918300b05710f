// Seconds on the monotonic clock since a point taken with std::chrono::steady_clock::now():
// deadlines and phase timings, never wall-clock dates (which a board's NTP can move).
#pragma once

#include <chrono>

namespace k3sys {

inline double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

}  // namespace k3sys
