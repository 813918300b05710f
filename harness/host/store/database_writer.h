// The one database writer of a farm controller: a thread that owns the results database's
// connection and stores what every board thread hands it, so 200 board threads never contend for
// SQLite's write lock (each holding its own connection, each commit waiting on the others).
//
// Writes are queued and applied in the order they were made, in batches: one transaction per
// batch, holding what is queued (up to `batch_rows` rows) once a query waits in the queue or the
// oldest write has waited `max_delay_s` -- so a write is committed within about max_delay_s (plus
// the batch's own time) of being made, and a query is answered when its batch commits. The queue
// holds at most `queue_rows` rows: a board thread that writes faster than the database takes rows
// waits (back-pressure) instead of growing memory.
//
// What "committed" means: a row is committed once the batch holding it has committed; a query
// returns only then, and rows are committed in order, so a row written after another is never
// committed without it. The farm sweep marks a cell done (farm_sweep_cells, the shared queue's
// claim) with writes made after the cell's samples and aggregate: a done cell's figures are always
// committed. A controller killed mid-run loses at most the batch not yet committed (never a row
// any query or report has seen), and --resume measures those cells again.
//
// A batch that cannot be stored (the database busy past its timeout, disk full, an error in
// k3tune's own SQL) is rolled back whole; from then on every write and query throws that failure
// (StoreError), so no row that may depend on a lost one is stored, and writes queued behind it are
// dropped. Once every board thread has stopped, the controller calls clear_failure() to store its
// own clean-up rows (lease releases), which depend on nothing that was lost.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "harness/host/store/database_access.h"

namespace k3store {

struct WriterOptions {
  std::size_t batch_rows = 2000;
  double max_delay_s = 0.05;
  std::size_t queue_rows = 20000;
};

// Enqueue-to-commit time of the writes (not the queries) a writer stored.
struct WriteLatency {
  std::size_t writes = 0, rows = 0, batches = 0;
  double p50_ms = 0, p99_ms = 0, max_ms = 0;
  std::size_t dropped = 0;  // writes lost to a failed batch or queued behind one
  // "12345 writes (67890 rows) in 321 batches; enqueue to commit p50 3.1 ms, p99 48 ms, max 60 ms"
  std::string summary() const;
};

class DatabaseWriter final : public DatabaseAccess {
 public:
  explicit DatabaseWriter(std::unique_ptr<Connection> connection, WriterOptions options = {});
  ~DatabaseWriter() override;  // stores what is queued, then stops the thread; never throws
  DatabaseWriter(const DatabaseWriter&) = delete;
  DatabaseWriter& operator=(const DatabaseWriter&) = delete;

  void write(DatabaseWork work, std::size_t rows = 1) override;
  void run(const DatabaseWork& work) override;
  void flush() override {
    run([](Connection&) {});
  }
  const std::string& path() const override { return connection_->path(); }

  // Drops what was queued before the call (when a batch failed) and accepts writes again.
  void clear_failure();
  // "" while every batch committed; else the first failure.
  std::string failure() const;
  WriteLatency latency() const;

 private:
  using Clock = std::chrono::steady_clock;
  struct Item {
    DatabaseWork work;
    std::size_t rows = 0;
    Clock::time_point queued;
    std::shared_ptr<std::promise<void>> done;  // run(): answered once committed
    bool clears = false;                       // clear_failure()
  };
  void enqueue(Item item);
  void loop();
  std::vector<Item> next_batch();
  void store(std::vector<Item>& batch);

  std::unique_ptr<Connection> connection_;
  WriterOptions options_;
  mutable std::mutex mu_;
  std::condition_variable queued_cv_, space_cv_;
  std::deque<Item> queue_;
  std::size_t queued_rows_ = 0;
  std::size_t queued_waiters_ = 0;  // run() items in the queue: close the batch for them
  bool stop_ = false;
  std::string failure_;
  std::vector<double> latencies_ms_;
  std::size_t rows_ = 0, batches_ = 0, dropped_ = 0;
  std::thread thread_;  // last: started once everything above exists
};

}  // namespace k3store
