// Watchdog for tests of code that can hang (worker pools, pipelines with barriers): runs fn on a
// helper thread and waits at most `seconds`. A hung pool cannot be recovered (its threads never
// return), so a hang is reported and the binary exits with failure instead of blocking the suite
// until an outer timeout.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <thread>

namespace k3k::testing_support {

template <typename Fn>
void run_with_deadline(double seconds, const char* what, Fn fn) {
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  std::thread t([&] {
    fn();
    {
      std::lock_guard<std::mutex> lock(mu);
      done = true;
    }
    cv.notify_one();
  });
  std::unique_lock<std::mutex> lock(mu);
  if (!cv.wait_for(lock, std::chrono::duration<double>(seconds), [&] { return done; })) {
    std::fprintf(stderr, "FATAL: %s did not finish within %.0f s (hang or lost wake-up)\n", what,
                 seconds);
    std::fflush(stderr);
    std::_Exit(1);
  }
  lock.unlock();
  t.join();
}

}  // namespace k3k::testing_support
