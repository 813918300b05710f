// The board threads of a farm sweep (farm_sweep.h): the queue of cells they share, what they
// share with the controller, and the thread of one board -- take the board, then measure batches
// of cells from the queue until none is left or the board leaves the run.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "harness/host/bench/sweep.h"
#include "harness/host/farm/farm.h"
#include "harness/host/farmbench/board_target.h"
#include "harness/host/farmbench/farm_sweep.h"
#include "harness/host/store/database_writer.h"

namespace k3farmbench {

// The queue of cells (positions into the outcome's cells) shared by the board threads. A thread
// waits while the queue is empty but another board still measures a batch that may come back.
class CellQueue {
 public:
  void push(std::size_t p) { queue_.push_back(p); }
  std::vector<std::size_t> take(int n) {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return aborted_ || !queue_.empty() || in_flight_ == 0; });
    std::vector<std::size_t> batch;
    if (aborted_) return batch;
    while (!queue_.empty() && static_cast<int>(batch.size()) < n) {
      batch.push_back(queue_.front());
      queue_.pop_front();
    }
    if (!batch.empty()) ++in_flight_;
    return batch;
  }
  void finish(const std::vector<std::size_t>& back) {
    {
      std::lock_guard lock(mu_);
      for (auto p : back) queue_.push_back(p);
      --in_flight_;
    }
    cv_.notify_all();
  }
  std::vector<std::size_t> left() const { return {queue_.begin(), queue_.end()}; }
  std::mutex& mu() { return mu_; }
  // Nothing left to hand out, now or later (no batch in flight may come back), or aborted.
  bool done() {
    std::lock_guard lock(mu_);
    return aborted_ || (queue_.empty() && in_flight_ == 0);
  }
  // The run ends: every take() returns nothing from now on.
  void abort() {
    {
      std::lock_guard lock(mu_);
      aborted_ = true;
    }
    cv_.notify_all();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::size_t> queue_;
  int in_flight_ = 0;
  bool aborted_ = false;
};

struct SweepContext {
  const std::string& root;
  const FarmBenchRequest& rq;
  k3store::DatabaseWriter& db;  // the one writer every board thread hands its rows to
  k3farm::Farm& farm;
  k3bench::SweepOptions options;
  FarmBenchOutcome& out;
  CellQueue queue;
  std::string queue_key;           // --shared-queue: the claims' key ("" : not shared)
  std::string controller_failure;  // the first one; set: the run ends, no board is blamed

  // A failure of this controller (database, descriptors, k3tune's own code): the run stops.
  void fail(const std::string& why) {
    {
      std::lock_guard lock(queue.mu());
      if (controller_failure.empty()) controller_failure = why;
    }
    queue.abort();
  }

  // The cell's row of farm_sweep_cells, handed to the writer (`attempt`: the hand-out it ends).
  void cell_row(const FarmCellResult& c, int attempt, const std::string& board,
                const std::string& run, const std::string& key, const std::string& outcome,
                const std::string& reason);
};

// The thread of one board: lease, deploy + probe, then batches from the queue. A board
// quarantined as unreachable or hung comes back when a power cycle through its PDU outlet cures it
// (power_recovery.h) while the run still has cells: it measures again.
class BoardWorker {
 public:
  BoardWorker(SweepContext& ctx, std::string board) : ctx_(ctx), board_(std::move(board)) {}

  void operator()();

 private:
  // Cells of a batch that go back to the queue, each with why.
  using Returned = std::vector<std::pair<std::size_t, std::string>>;

  bool measure_on_board();
  bool back_after_power();
  bool board_lost(const std::exception& e) const;
  bool take_board();
  void row(std::size_t p, const std::string& run, const std::string& key,
           const std::string& outcome, const std::string& reason);
  std::vector<std::size_t> claimed(const std::vector<std::size_t>& taken);
  bool measure_batch();
  std::vector<k3bench::CellSpec> handed_out(const std::vector<std::size_t>& batch);
  bool settle_batch(const std::vector<std::size_t>& batch, const k3bench::SweepReport& rep,
                    Returned& back);
  void stop_run(const std::exception& e, const std::string& run);
  void settle_lost_batch(const std::vector<std::size_t>& batch,
                         const std::vector<k3bench::CellSpec>& specs, const std::string& run,
                         const std::string& why, Returned& back);
  void requeue(const Returned& back);
  void settle(std::size_t p, const std::string& run, const k3bench::CellOutcome& o);
  void finish(std::size_t index);

  SweepContext& ctx_;
  std::string board_;
  std::unique_ptr<JudgedBoardTarget> target_;
  std::unique_ptr<FarmExecutor> executor_;
  std::string hash_;
};

}  // namespace k3farmbench
