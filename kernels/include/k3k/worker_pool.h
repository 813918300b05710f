// Persistent worker pool used by every op. The calling thread takes part as worker 0, so a pool of
// size 1 spawns no thread and runs everything inline.
//
// Determinism: parallel_for hands out task indices dynamically, so which worker runs a task varies
// from call to call. Kernels therefore make each task own a disjoint set of outputs and never split
// an output's reduction across tasks; results are then bitwise identical for every worker count.
//
// Placement (K3): the A100 cores (CPUs 8-15) are gated. A thread must write "0" to
// /proc/set_ai_thread before sched_setaffinity to them succeeds, and its vlenb changes when it
// migrates, so each worker opts in and pins itself first thing in its own thread, before it runs
// any kernel. Worker 0 is the constructing thread: it is placed in the constructor (so build the
// pool before running vector code) and its previous affinity is restored by the destructor.
// A failed opt-in or pin is recorded per worker and the worker runs unpinned.
#pragma once

#include <atomic>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace k3k {

struct WorkerPoolOptions {
  int workers = 0;                // <= 0: one per hardware thread (or one per listed CPU)
  std::vector<int> cpus;          // worker w is pinned to cpus[w % cpus.size()]; empty: unpinned
  bool ai_thread_opt_in = false;  // write "0" to /proc/set_ai_thread before pinning (K3 A100 CPUs)
  // How long an idle worker (and the caller waiting for the others) spins on the job counter
  // before parking in atomic::wait. Waking a parked thread costs about as long as a short decode
  // call, so the default spins; 0 parks at once; a huge value never parks.
  int spin_iterations = kDefaultSpinIterations;
  static constexpr int kDefaultSpinIterations = 20000;
};

// Watches the pool's parallel regions (a tracer: k3bench --model --trace). region() runs on the
// worker's own thread after it finished its share of a region: when it started and stopped
// (steady_clock nanoseconds) and how many tasks it ran. Without an observer the pool reads no
// clock.
class WorkerPoolObserver {
 public:
  virtual ~WorkerPoolObserver() = default;
  virtual void region(int worker, std::int64_t begin_ns, std::int64_t end_ns,
                      std::int64_t tasks) = 0;
  // A stage of a pipelined kernel inside a region, on the worker's own thread: `what` is a static
  // name ("tcm_copy", "tcm_compute", "pair_wait" in the TCM decode pipeline), `item` what it
  // worked on (a slab), `lane` the worker group it belongs to (a pair). Default: ignored.
  virtual void stage(int worker, const char* what, std::int64_t item, int lane,
                     std::int64_t begin_ns, std::int64_t end_ns) {
    (void)worker, (void)what, (void)item, (void)lane, (void)begin_ns, (void)end_ns;
  }
};

// What happened when a worker placed itself.
struct WorkerPlacement {
  int cpu = -1;           // requested CPU, -1 when unpinned by request
  bool opted_in = false;  // the /proc/set_ai_thread write succeeded
  bool pinned = false;    // sched affinity set to exactly `cpu`
  std::string
      problem;  // empty, or why the opt-in or the pin failed (the worker then runs unpinned)
};

class WorkerPool {
 public:
  // workers <= 0 means one per hardware thread.
  explicit WorkerPool(int workers);
  explicit WorkerPool(const WorkerPoolOptions& options);
  ~WorkerPool();
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  int size() const { return static_cast<int>(threads_.size()) + 1; }
  const WorkerPlacement& placement(int worker) const {
    return placement_[static_cast<std::size_t>(worker)];
  }
  // Workers 2p and 2p+1 form pair p; on a K3 the two cores of a pair share IME2 and TCM resources.
  static int partner_of(int worker) { return worker ^ 1; }

  // Runs fn(task, worker) for every task in [0, tasks) and returns when all have finished.
  // Kernels report errors before they start parallel work; should a task throw all the same, the
  // tasks not yet started are skipped and the first exception is rethrown here, on the calling
  // thread, once every worker has stopped (a throw must never end a worker thread: that aborts
  // the process). Cooperative kernels (run_each with barriers) must not throw past a barrier.
  template <typename Fn>
  void parallel_for(std::int64_t tasks, Fn&& fn) {
    if (tasks <= 0) return;
    run(tasks, Mode::kTasks, trampoline<Fn>(), const_cast<void*>(static_cast<const void*>(&fn)));
  }

  // parallel_for on workers 0..workers-1 only (0, or >= size(): all of them). Each of them takes
  // tasks from a shared counter, so which worker ran a task changes, never what a task computes.
  template <typename Fn>
  void parallel_for_on(int workers, std::int64_t tasks, Fn&& fn) {
    if (workers <= 0 || workers >= size()) return parallel_for(tasks, fn);
    if (tasks <= 0) return;
    std::atomic<std::int64_t> next{0};
    run_each(workers, [&](int worker) {
      for (std::int64_t t = next.fetch_add(1, std::memory_order_relaxed); t < tasks;
           t = next.fetch_add(1, std::memory_order_relaxed))
        fn(t, worker);
    });
  }

  // Runs fn(worker) exactly once on each of workers 0..count-1, all at the same time (each on its
  // own thread), and returns when all have finished. For cooperative kernels whose workers wait
  // for each other (pipelines with pair barriers): with parallel_for one thread could take two
  // such tasks in turn and wait for itself forever. count must be in [1, size()].
  template <typename Fn>
  void run_each(int count, Fn&& fn) {
    auto each = [&fn](std::int64_t, int worker) { fn(worker); };
    run(count, Mode::kEach, trampoline<decltype(each)>(), &each);
  }

  static int hardware_workers();

  // Set between calls (not while a region runs); null removes it.
  void set_observer(WorkerPoolObserver* observer) { observer_ = observer; }
  WorkerPoolObserver* observer() const { return observer_; }

 private:
  using TaskFn = void (*)(void* ctx, std::int64_t task, int worker);
  enum class Mode { kTasks, kEach };
  template <typename Fn>
  static TaskFn trampoline() {
    return [](void* ctx, std::int64_t task, int worker) {
      (*static_cast<std::remove_reference_t<Fn>*>(ctx))(task, worker);
    };
  }
  void run(std::int64_t tasks, Mode mode, TaskFn fn, void* ctx);
  void worker_main(int worker);
  void work(int worker);
  void work_tasks(int worker);
  void work_observed(int worker);
  void record_failure(std::exception_ptr failure);

  WorkerPoolOptions options_;
  std::vector<WorkerPlacement> placement_;
  std::vector<std::thread> threads_;
  std::shared_ptr<void>
      caller_affinity_;  // worker 0's affinity before placement (restored on exit)
  // Job description, published by the release store to generation_.
  TaskFn job_fn_ = nullptr;
  void* job_ctx_ = nullptr;
  std::int64_t job_tasks_ = 0;
  Mode job_mode_ = Mode::kTasks;
  WorkerPoolObserver* observer_ = nullptr;  // read by the workers after generation_'s acquire
  alignas(64) std::atomic<std::int64_t> next_task_{0};
  alignas(64) std::atomic<std::uint64_t> generation_{0};
  alignas(64) std::atomic<int> busy_workers_{0};
  std::atomic<int> placed_workers_{0};
  // The first exception a task threw in the current region (rethrown by run()).
  std::mutex failure_mutex_;
  std::exception_ptr failure_;
  std::atomic<bool> stopping_{false};
};

}  // namespace k3k
