#include "k3k/worker_pool.h"

namespace k3k {

namespace {
// Decode kernels run for tens of microseconds; waking a sleeping thread costs about as much.
// Workers therefore spin briefly on the generation counter before parking in atomic::wait.
constexpr int kSpinIterations = 20000;

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}
}  // namespace

int WorkerPool::hardware_workers() {
  const unsigned n = std::thread::hardware_concurrency();
  return n == 0 ? 1 : static_cast<int>(n);
}

WorkerPool::WorkerPool(int workers) {
  if (workers <= 0) workers = hardware_workers();
  threads_.reserve(static_cast<std::size_t>(workers - 1));
  for (int w = 1; w < workers; ++w) threads_.emplace_back([this, w] { worker_main(w); });
}

WorkerPool::~WorkerPool() {
  stopping_.store(true, std::memory_order_relaxed);
  generation_.fetch_add(1, std::memory_order_release);
  generation_.notify_all();
  for (auto& t : threads_) t.join();
}

void WorkerPool::drain(int worker) {
  for (;;) {
    const std::int64_t task = next_task_.fetch_add(1, std::memory_order_relaxed);
    if (task >= job_tasks_) return;
    job_fn_(job_ctx_, task, worker);
  }
}

void WorkerPool::run(std::int64_t tasks, TaskFn fn, void* ctx) {
  if (threads_.empty() || tasks == 1) {
    for (std::int64_t t = 0; t < tasks; ++t) fn(ctx, t, 0);
    return;
  }
  job_fn_ = fn;
  job_ctx_ = ctx;
  job_tasks_ = tasks;
  next_task_.store(0, std::memory_order_relaxed);
  busy_workers_.store(static_cast<int>(threads_.size()), std::memory_order_relaxed);
  generation_.fetch_add(1, std::memory_order_release);
  generation_.notify_all();
  drain(0);
  // Wait for the other workers to finish their last task (and to stop reading the job fields).
  for (int spins = 0; busy_workers_.load(std::memory_order_acquire) != 0; ++spins) {
    if (spins < kSpinIterations) {
      cpu_relax();
    } else {
      int busy = busy_workers_.load(std::memory_order_acquire);
      if (busy != 0) busy_workers_.wait(busy, std::memory_order_acquire);
    }
  }
}

void WorkerPool::worker_main(int worker) {
  std::uint64_t seen = 0;
  for (;;) {
    std::uint64_t gen = generation_.load(std::memory_order_acquire);
    for (int spins = 0; gen == seen; ++spins) {
      if (spins < kSpinIterations) {
        cpu_relax();
      } else {
        generation_.wait(seen, std::memory_order_acquire);
      }
      gen = generation_.load(std::memory_order_acquire);
    }
    seen = gen;
    if (stopping_.load(std::memory_order_relaxed)) return;
    drain(worker);
    if (busy_workers_.fetch_sub(1, std::memory_order_acq_rel) == 1) busy_workers_.notify_one();
  }
}

}  // namespace k3k
