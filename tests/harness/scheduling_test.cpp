// The runner's scheduling readings (harness/runner/scheduling.h) against a situation whose answer
// is known: more spinning threads than CPUs must wait for a CPU, and the wait is the run delay.
#include "harness/runner/scheduling.h"

#include <gtest/gtest.h>
#include <sched.h>

#include <time.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

namespace {

TEST(HarnessScheduling, OversubscribedThreadsShowTheirWaitAsRunDelay) {
  cpu_set_t allowed;
  ASSERT_EQ(sched_getaffinity(0, sizeof allowed, &allowed), 0);
  const int cpus = CPU_COUNT(&allowed);
  const k3runner::SchedulingSnapshot before = k3runner::scheduling_snapshot();
  ASSERT_GE(before.run_delay_ns, 0) << "no /proc/self/task/*/schedstat on this kernel";
  // Four times as many busy threads as allowed CPUs for 400 ms: each runs about a quarter of the
  // time and waits the rest, so the process's run delay is about three times the CPU time it
  // got -- which tells the wait apart from the run time (the field next to it in schedstat).
  const auto process_cpu_ns = [] {
    timespec t{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return 1e9 * double(t.tv_sec) + double(t.tv_nsec);
  };
  const double cpu0 = process_cpu_ns();
  const auto spin = std::chrono::milliseconds(400);
  std::atomic<bool> stop{false};
  std::vector<std::thread> threads;
  for (int i = 0; i < 4 * cpus; ++i)
    threads.emplace_back([&] {
      volatile unsigned long x = 0;
      while (!stop.load(std::memory_order_relaxed)) x = x + 1;
    });
  std::this_thread::sleep_for(spin);
  // Read while the threads still exist: an exited thread's run delay leaves /proc/self/task.
  const k3runner::SchedulingSnapshot during = k3runner::scheduling_snapshot();
  const double cpu_used = process_cpu_ns() - cpu0;
  stop = true;
  for (auto& t : threads) t.join();
  const auto taken = k3runner::scheduling_delta(before, during);
  EXPECT_GT(taken.run_delay_ns, 0.1 * 400e6 * cpus);
  EXPECT_GT(taken.run_delay_ns, 1.5 * cpu_used) << "CPU time used " << cpu_used << " ns";
  // Steal cannot be provoked from inside the guest; it is read (>= 0) or unknown (-1), never less.
  EXPECT_GE(taken.steal_ns, before.steal_ns < 0 ? -1.0 : 0.0);
}

TEST(HarnessScheduling, DeltaIsUnknownWhenEitherSideIs) {
  const auto d = k3runner::scheduling_delta({100, -1}, {250, 40});
  EXPECT_DOUBLE_EQ(d.run_delay_ns, 150);
  EXPECT_DOUBLE_EQ(d.steal_ns, -1);
}

}  // namespace
