// WorkerPool: exactly-once task execution, worker ids (range, one thread per id, caller is worker
// 0), no lost wake-ups over many back-to-back calls, clean construction/destruction, size().
#include <gtest/gtest.h>
#include <pthread.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "k3k/worker_pool.h"
#include "support/deadline.h"

namespace k3k {
namespace {

std::size_t sz(std::int64_t v) { return static_cast<std::size_t>(v); }

using testing_support::run_with_deadline;

// One parallel_for with full bookkeeping: each task index must run exactly once, on a worker id in
// [0, size), each worker id must map to one thread, distinct ids to distinct threads, and worker 0
// must be the calling thread.
void check_one_call(WorkerPool& pool, std::int64_t tasks) {
  std::vector<std::atomic<int>> runs(sz(tasks));
  for (auto& r : runs) r.store(0);
  std::vector<int> worker_of(sz(tasks), -1);
  std::vector<std::thread::id> thread_of(sz(tasks));
  std::atomic<int> bad_worker{0};
  pool.parallel_for(tasks, [&](std::int64_t task, int worker) {
    if (task < 0 || task >= tasks) {
      bad_worker.fetch_add(1000);
      return;
    }
    if (worker < 0 || worker >= pool.size()) bad_worker.fetch_add(1);
    runs[sz(task)].fetch_add(1);
    worker_of[sz(task)] = worker;  // plain writes: parallel_for must make them visible on return
    thread_of[sz(task)] = std::this_thread::get_id();
  });
  ASSERT_EQ(bad_worker.load(), 0) << "task index or worker id out of range";
  std::vector<std::thread::id> thread_of_worker(sz(pool.size()));
  for (std::int64_t t = 0; t < tasks; ++t) {
    ASSERT_EQ(runs[sz(t)].load(), 1) << "task " << t << " of " << tasks << " ran " << runs[sz(t)].load()
                                     << " times (pool of " << pool.size() << ")";
    const int w = worker_of[sz(t)];
    if (thread_of_worker[sz(w)] == std::thread::id()) thread_of_worker[sz(w)] = thread_of[sz(t)];
    ASSERT_EQ(thread_of_worker[sz(w)], thread_of[sz(t)]) << "worker id " << w << " used by two threads";
  }
  if (thread_of_worker[0] != std::thread::id()) {
    EXPECT_EQ(thread_of_worker[0], std::this_thread::get_id()) << "worker 0 must be the calling thread";
  }
  for (std::size_t a = 0; a < thread_of_worker.size(); ++a)
    for (std::size_t b = a + 1; b < thread_of_worker.size(); ++b)
      if (thread_of_worker[a] != std::thread::id()) {
        EXPECT_NE(thread_of_worker[a], thread_of_worker[b]) << "workers " << a << " and " << b << " share a thread";
      }
  if (pool.size() == 1 || tasks == 1) {
    for (std::int64_t t = 0; t < tasks; ++t) {
      EXPECT_EQ(worker_of[sz(t)], 0);
      EXPECT_EQ(thread_of[sz(t)], std::this_thread::get_id()) << "runs inline on the caller";
    }
  }
}

TEST(WorkerPool, EveryTaskRunsExactlyOnceOnAValidWorker) {
  run_with_deadline(120, "EveryTaskRunsExactlyOnce", [] {
    for (int workers : {1, 2, 3, 8}) {
      WorkerPool pool(workers);
      ASSERT_EQ(pool.size(), workers);
      for (int rep = 0; rep < 3; ++rep) {
        for (std::int64_t tasks : {0, 1, 2, 7, 1000}) {
          SCOPED_TRACE(testing::Message() << "workers=" << workers << " tasks=" << tasks << " rep=" << rep);
          check_one_call(pool, tasks);
        }
      }
    }
  });
}

TEST(WorkerPool, NoTwoTasksRunConcurrentlyOnOneWorkerId) {
  // Kernels index per-worker scratch by the worker id, so an id must never be active twice at once.
  run_with_deadline(120, "NoTwoTasksRunConcurrentlyOnOneWorkerId", [] {
    for (int workers : {2, 3, 8}) {
      WorkerPool pool(workers);
      std::vector<std::atomic<int>> active(sz(workers));
      for (auto& a : active) a.store(0);
      std::atomic<int> overlaps{0};
      std::atomic<std::int64_t> sink{0};
      for (int rep = 0; rep < 20; ++rep) {
        pool.parallel_for(200, [&](std::int64_t task, int worker) {
          if (active[sz(worker)].fetch_add(1) != 0) overlaps.fetch_add(1);
          std::uint64_t x = static_cast<std::uint64_t>(task);
          for (int i = 0; i < 2000; ++i) x = x * 6364136223846793005ULL + 1442695040888963407ULL;
          sink.fetch_add(static_cast<std::int64_t>(x & 1));
          active[sz(worker)].fetch_sub(1);
        });
      }
      EXPECT_EQ(overlaps.load(), 0) << "pool of " << workers;
    }
  });
}

// Runs `calls` parallel_for calls of i % 6 tasks (including the inline 0- and 1-task paths) and
// checks after each that all its tasks ran. `pause_every` > 0 sleeps 3 ms before every such call,
// long enough for the workers to stop spinning and park.
void back_to_back(int workers, int calls, int pause_every) {
  WorkerPool pool(workers);
  std::atomic<std::int64_t> executed{0};
  std::int64_t expected = 0;
  for (int i = 0; i < calls; ++i) {
    if (pause_every > 0 && i % pause_every == 0) std::this_thread::sleep_for(std::chrono::milliseconds(3));
    const std::int64_t tasks = i % 6;
    pool.parallel_for(tasks, [&](std::int64_t, int) { executed.fetch_add(1, std::memory_order_relaxed); });
    expected += tasks;
    if (executed.load() != expected) {
      ADD_FAILURE() << "call " << i << " returned before all its tasks ran (pool of " << workers << ")";
      return;
    }
  }
  EXPECT_EQ(executed.load(), expected);
}

TEST(WorkerPool, ManyBackToBackSmallCallsComplete) {
  // 20000 tiny jobs in a row: each needs every worker to wake, drain and check in. A lost wake-up
  // (a worker missing a generation, or the caller missing the last check-in) hangs here. Pools
  // larger than the core count are much slower per call (every worker must be scheduled to check
  // in), so they get fewer calls.
  run_with_deadline(300, "20000 back-to-back calls, pool of 2", [] { back_to_back(2, 20000, 1000); });
  run_with_deadline(300, "back-to-back calls, pool of 3", [] { back_to_back(3, 1000, 0); });
  run_with_deadline(300, "back-to-back calls, pool of 8", [] { back_to_back(8, 200, 0); });
}

TEST(WorkerPool, WakesParkedWorkersAndCaller) {
  // Parked workers (atomic wait on the generation) must wake for each new job, and a caller that
  // parks waiting for a slow worker to check in must wake when it does.
  run_with_deadline(300, "calls after pauses", [] {
    back_to_back(2, 120, 1);
    back_to_back(3, 60, 1);
  });
  run_with_deadline(300, "caller waiting for slow tasks", [] {
    for (int workers : {2, 3}) {
      WorkerPool pool(workers);
      std::atomic<int> executed{0};
      for (int i = 0; i < 40; ++i) {
        pool.parallel_for(workers, [&](std::int64_t, int) {
          std::this_thread::sleep_for(std::chrono::milliseconds(3));
          executed.fetch_add(1);
        });
        ASSERT_EQ(executed.load(), (i + 1) * workers);
      }
    }
  });
}

TEST(WorkerPool, RepeatedConstructionAndDestructionDoesNotHang) {
  run_with_deadline(300, "RepeatedConstructionAndDestruction", [] {
    std::atomic<std::int64_t> executed{0};
    std::int64_t expected = 0;
    for (int i = 0; i < 200; ++i) {
      WorkerPool pool(1 + i % 4);
      switch (i % 3) {
        case 0:  // destroyed right away, possibly before its threads have started waiting
          break;
        case 1:
          pool.parallel_for(5, [&](std::int64_t, int) { executed.fetch_add(1); });
          expected += 5;
          break;
        default:
          pool.parallel_for(2, [&](std::int64_t, int) { executed.fetch_add(1); });
          pool.parallel_for(9, [&](std::int64_t, int) { executed.fetch_add(1); });
          expected += 11;
          break;
      }
    }
    EXPECT_EQ(executed.load(), expected);
  });
}

TEST(WorkerPool, SizeSemantics) {
  const int hw = WorkerPool::hardware_workers();
  EXPECT_GE(hw, 1);
  const unsigned hc = std::thread::hardware_concurrency();
  EXPECT_EQ(hw, hc == 0 ? 1 : static_cast<int>(hc));
  EXPECT_EQ(WorkerPool(1).size(), 1);
  EXPECT_EQ(WorkerPool(2).size(), 2);
  EXPECT_EQ(WorkerPool(5).size(), 5);
  EXPECT_EQ(WorkerPool(0).size(), hw);
  EXPECT_EQ(WorkerPool(-3).size(), hw);
  // A default-sized pool still runs everything exactly once.
  run_with_deadline(60, "hardware-sized pool", [] {
    WorkerPool pool(0);
    check_one_call(pool, 333);
  });
}

TEST(WorkerPool, AcceptsAnyCallableForm) {
  WorkerPool pool(3);
  std::atomic<int> count{0};
  const auto const_lambda = [&count](std::int64_t, int) { count.fetch_add(1); };
  pool.parallel_for(10, const_lambda);
  auto mutable_lambda = [&count](std::int64_t, int) mutable { count.fetch_add(1); };
  pool.parallel_for(10, mutable_lambda);
  pool.parallel_for(10, [&count](std::int64_t, int) { count.fetch_add(1); });
  struct Functor {
    std::atomic<int>* c;
    void operator()(std::int64_t, int) const { c->fetch_add(1); }
  };
  pool.parallel_for(10, Functor{&count});
  EXPECT_EQ(count.load(), 40);
  // Non-positive task counts never call fn.
  pool.parallel_for(0, [&count](std::int64_t, int) { count.fetch_add(100); });
  pool.parallel_for(-5, [&count](std::int64_t, int) { count.fetch_add(100); });
  EXPECT_EQ(count.load(), 40);
}

TEST(WorkerPool, RunEachRunsEveryWorkerOnceConcurrently) {
  // run_each is for cooperative kernels: all `count` workers must be inside fn at the same time, so
  // a rendezvous of all of them must complete (it would hang if one thread ran two workers in turn).
  run_with_deadline(120, "RunEach", [] {
    for (int workers : {1, 2, 3, 8}) {
      WorkerPool pool(workers);
      for (int count = 1; count <= workers; ++count) {
        for (int rep = 0; rep < 20; ++rep) {
          std::atomic<int> arrived{0};
          std::vector<std::atomic<int>> runs(sz(workers));
          for (auto& r : runs) r.store(0);
          std::atomic<bool> caller_is_worker0{false};
          const auto caller = std::this_thread::get_id();
          pool.run_each(count, [&](int w) {
            runs[sz(w)].fetch_add(1);
            if (w == 0) caller_is_worker0.store(std::this_thread::get_id() == caller);
            arrived.fetch_add(1);
            while (arrived.load() < count) std::this_thread::yield();
          });
          for (int w = 0; w < workers; ++w) ASSERT_EQ(runs[sz(w)].load(), w < count ? 1 : 0) << "worker " << w;
          EXPECT_TRUE(caller_is_worker0.load());
        }
      }
      EXPECT_THROW(pool.run_each(workers + 1, [](int) {}), std::invalid_argument);
      EXPECT_THROW(pool.run_each(0, [](int) {}), std::invalid_argument);
    }
  });
}

TEST(WorkerPool, PlacementPinsEachWorkerAndRecordsFailures) {
  // Pin every worker to CPU 0 (exists everywhere) and check from inside each worker thread.
  {
    WorkerPool pool(WorkerPoolOptions{.workers = 3, .cpus = {0}});
    for (int w = 0; w < 3; ++w) {
      EXPECT_TRUE(pool.placement(w).pinned) << pool.placement(w).problem;
      EXPECT_EQ(pool.placement(w).cpu, 0);
    }
    std::vector<int> cpu_of(3, -1);
    pool.run_each(3, [&](int w) { cpu_of[sz(w)] = sched_getcpu(); });
    for (int w = 0; w < 3; ++w) EXPECT_EQ(cpu_of[sz(w)], 0) << "worker " << w;
  }
  // A CPU that does not exist and an opt-in file that does not exist: recorded, the pool still runs.
  WorkerPool pool(WorkerPoolOptions{.workers = 2, .cpus = {1000}, .ai_thread_opt_in = true});
  for (int w = 0; w < 2; ++w) {
    EXPECT_FALSE(pool.placement(w).pinned);
    EXPECT_NE(pool.placement(w).problem.find("pin to cpu 1000"), std::string::npos) << pool.placement(w).problem;
    if (access("/proc/set_ai_thread", F_OK) != 0) {
      EXPECT_FALSE(pool.placement(w).opted_in);
      EXPECT_NE(pool.placement(w).problem.find("/proc/set_ai_thread"), std::string::npos);
    }
  }
  std::atomic<int> count{0};
  pool.parallel_for(10, [&](std::int64_t, int) { count.fetch_add(1); });
  EXPECT_EQ(count.load(), 10);
}

TEST(WorkerPool, CallerAffinityIsRestoredOnDestruction) {
  cpu_set_t before;
  ASSERT_EQ(pthread_getaffinity_np(pthread_self(), sizeof before, &before), 0);
  { WorkerPool pool(WorkerPoolOptions{.workers = 2, .cpus = {0}}); }
  cpu_set_t after;
  ASSERT_EQ(pthread_getaffinity_np(pthread_self(), sizeof after, &after), 0);
  EXPECT_TRUE(CPU_EQUAL(&before, &after));
}

}  // namespace
}  // namespace k3k
