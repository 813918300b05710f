#include "k3k/worker_pool.h"

#include <chrono>
#include <stdexcept>
#include <string>

#include "k3k/cpu_relax.h"
#include "k3k/thread_placement.h"

namespace k3k {

namespace {

int cpu_for(const WorkerPoolOptions& options, int worker) {
  if (options.cpus.empty()) return -1;
  return options.cpus[static_cast<std::size_t>(worker) % options.cpus.size()];
}
}  // namespace

int WorkerPool::hardware_workers() {
  const unsigned n = std::thread::hardware_concurrency();
  return n == 0 ? 1 : static_cast<int>(n);
}

WorkerPool::WorkerPool(int workers)
    : WorkerPool(WorkerPoolOptions{.workers = workers, .cpus = {}}) {}

WorkerPool::WorkerPool(const WorkerPoolOptions& options) : options_(options) {
  int workers = options_.workers;
  if (workers <= 0)
    workers = options_.cpus.empty() ? hardware_workers() : static_cast<int>(options_.cpus.size());
  placement_.resize(static_cast<std::size_t>(workers));
  const bool place = options_.ai_thread_opt_in || !options_.cpus.empty();
  if (place) {
    caller_affinity_ = save_thread_affinity();
    placement_[0] = place_current_thread(cpu_for(options_, 0), options_.ai_thread_opt_in);
  }
  threads_.reserve(static_cast<std::size_t>(workers - 1));
  for (int w = 1; w < workers; ++w) threads_.emplace_back([this, w] { worker_main(w); });
  // Placement results are part of the pool's state: wait until every worker has reported.
  for (int placed = placed_workers_.load(std::memory_order_acquire); placed != workers - 1;
       placed = placed_workers_.load(std::memory_order_acquire)) {
    placed_workers_.wait(placed, std::memory_order_acquire);
  }
}

WorkerPool::~WorkerPool() {
  stopping_.store(true, std::memory_order_relaxed);
  generation_.fetch_add(1, std::memory_order_release);
  generation_.notify_all();
  for (auto& t : threads_) t.join();
  restore_thread_affinity(caller_affinity_);
}

namespace {
std::int64_t steady_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}
}  // namespace

// work() under an observer: the same tasks, and the worker's share of the region reported.
void WorkerPool::work_observed(int worker) {
  const std::int64_t begin = steady_ns();
  std::int64_t ran = 0;
  if (job_mode_ == Mode::kEach) {
    if (worker < job_tasks_) {
      job_fn_(job_ctx_, worker, worker);
      ran = 1;
    }
  } else {
    for (;;) {
      const std::int64_t task = next_task_.fetch_add(1, std::memory_order_relaxed);
      if (task >= job_tasks_) break;
      job_fn_(job_ctx_, task, worker);
      ++ran;
    }
  }
  observer_->region(worker, begin, steady_ns(), ran);
}

void WorkerPool::record_failure(std::exception_ptr failure) {
  std::lock_guard lock(failure_mutex_);
  if (!failure_) failure_ = std::move(failure);
  next_task_.store(job_tasks_, std::memory_order_relaxed);  // no further task starts
}

// A worker's share of the region; an exception ends the share and is kept for run().
void WorkerPool::work(int worker) {
  try {
    work_tasks(worker);
  } catch (...) {
    record_failure(std::current_exception());
  }
}

void WorkerPool::work_tasks(int worker) {
  if (observer_ != nullptr) {
    work_observed(worker);
    return;
  }
  if (job_mode_ == Mode::kEach) {
    if (worker < job_tasks_) job_fn_(job_ctx_, worker, worker);
    return;
  }
  for (;;) {
    const std::int64_t task = next_task_.fetch_add(1, std::memory_order_relaxed);
    if (task >= job_tasks_) return;
    job_fn_(job_ctx_, task, worker);
  }
}

void WorkerPool::run(std::int64_t tasks, Mode mode, TaskFn fn, void* ctx) {
  if (mode == Mode::kEach && (tasks < 1 || tasks > size())) {
    throw std::invalid_argument("WorkerPool::run_each: count " + std::to_string(tasks) +
                                " outside [1, " + std::to_string(size()) + "]");
  }
  if (threads_.empty() || tasks == 1) {
    const std::int64_t begin = observer_ != nullptr ? steady_ns() : 0;
    if (mode == Mode::kEach) {
      fn(ctx, 0, 0);
    } else {
      for (std::int64_t t = 0; t < tasks; ++t) fn(ctx, t, 0);
    }
    if (observer_ != nullptr)
      observer_->region(0, begin, steady_ns(), mode == Mode::kEach ? 1 : tasks);
    return;
  }
  job_fn_ = fn;
  job_ctx_ = ctx;
  job_tasks_ = tasks;
  job_mode_ = mode;
  next_task_.store(0, std::memory_order_relaxed);
  busy_workers_.store(static_cast<int>(threads_.size()), std::memory_order_relaxed);
  generation_.fetch_add(1, std::memory_order_release);
  generation_.notify_all();
  work(0);
  // Wait for the other workers to finish their last task (and to stop reading the job fields).
  for (int spins = 0; busy_workers_.load(std::memory_order_acquire) != 0; ++spins) {
    if (spins < options_.spin_iterations) {
      cpu_relax();
    } else {
      int busy = busy_workers_.load(std::memory_order_acquire);
      if (busy != 0) busy_workers_.wait(busy, std::memory_order_acquire);
    }
  }
  if (failure_) {  // every worker has stopped: the region's first exception, on this thread
    std::exception_ptr failure;
    std::swap(failure, failure_);
    std::rethrow_exception(failure);
  }
}

void WorkerPool::worker_main(int worker) {
  // First thing on the new thread, before any kernel code: opt in and pin (see the header).
  if (options_.ai_thread_opt_in || !options_.cpus.empty()) {
    placement_[static_cast<std::size_t>(worker)] =
        place_current_thread(cpu_for(options_, worker), options_.ai_thread_opt_in);
  }
  placed_workers_.fetch_add(1, std::memory_order_release);
  placed_workers_.notify_all();
  std::uint64_t seen = 0;
  for (;;) {
    std::uint64_t gen = generation_.load(std::memory_order_acquire);
    for (int spins = 0; gen == seen; ++spins) {
      if (spins < options_.spin_iterations) {
        cpu_relax();
      } else {
        generation_.wait(seen, std::memory_order_acquire);
      }
      gen = generation_.load(std::memory_order_acquire);
    }
    seen = gen;
    if (stopping_.load(std::memory_order_relaxed)) return;
    work(worker);
    if (busy_workers_.fetch_sub(1, std::memory_order_acq_rel) == 1) busy_workers_.notify_one();
  }
}

}  // namespace k3k
