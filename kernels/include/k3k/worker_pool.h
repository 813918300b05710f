// Persistent worker pool used by every op. The calling thread takes part as worker 0, so a pool of
// size 1 spawns no thread and runs everything inline.
//
// Determinism: parallel_for hands out task indices dynamically, so which worker runs a task varies
// from call to call. Kernels therefore make each task own a disjoint set of outputs and never split
// an output's reduction across tasks; results are then bitwise identical for every worker count.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <thread>
#include <vector>

namespace k3k {

class WorkerPool {
 public:
  // workers <= 0 means one per hardware thread.
  explicit WorkerPool(int workers);
  ~WorkerPool();
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  int size() const { return static_cast<int>(threads_.size()) + 1; }

  // Runs fn(task, worker) for every task in [0, tasks) and returns when all have finished.
  // fn must not throw (kernels report errors before they start parallel work).
  template <typename Fn>
  void parallel_for(std::int64_t tasks, Fn&& fn) {
    if (tasks <= 0) return;
    auto trampoline = [](void* ctx, std::int64_t task, int worker) {
      (*static_cast<std::remove_reference_t<Fn>*>(ctx))(task, worker);
    };
    run(tasks, trampoline, const_cast<void*>(static_cast<const void*>(&fn)));
  }

  static int hardware_workers();

 private:
  using TaskFn = void (*)(void* ctx, std::int64_t task, int worker);
  void run(std::int64_t tasks, TaskFn fn, void* ctx);
  void worker_main(int worker);
  void drain(int worker);

  std::vector<std::thread> threads_;
  // Job description, published by the release store to generation_.
  TaskFn job_fn_ = nullptr;
  void* job_ctx_ = nullptr;
  std::int64_t job_tasks_ = 0;
  alignas(64) std::atomic<std::int64_t> next_task_{0};
  alignas(64) std::atomic<std::uint64_t> generation_{0};
  alignas(64) std::atomic<int> busy_workers_{0};
  std::atomic<bool> stopping_{false};
};

}  // namespace k3k
