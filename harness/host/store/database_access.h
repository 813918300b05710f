// How code that stores results reaches the database, so one piece of code (the sweep, the farm's
// bookkeeping) can run single-threaded on a connection or as one of a farm controller's board
// threads:
//   DirectAccess   -- a connection used in place: write() has committed when it returns (the work
//                     opens its own transactions, as a one-target command always did);
//   DatabaseWriter -- (database_writer.h) the one thread of a controller that owns the connection:
//                     writes are queued and committed in batches, in the order they were made.
// Either way a query sees every write made earlier through the same access, and returns only when
// those writes are committed: a caller never acts on a row that could still be lost.
#pragma once

#include <cstddef>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>

#include "harness/host/store/sqlite.h"

namespace k3store {

using DatabaseWork = std::function<void(Connection&)>;

class DatabaseAccess {
 public:
  virtual ~DatabaseAccess() = default;
  // Stores what `work` writes (about `rows` rows: a writer sizes its batches by them). The work
  // may open a Transaction of its own (a savepoint inside a writer's batch).
  virtual void write(DatabaseWork work, std::size_t rows = 1) = 0;
  // Runs `work` after every earlier write and returns once they and it are committed.
  virtual void run(const DatabaseWork& work) = 0;
  // Returns once every write made so far is committed.
  virtual void flush() = 0;
  virtual const std::string& path() const = 0;

  // run() for work that returns a value (a read, or a read-modify-write such as a claim).
  template <class F>
  std::invoke_result_t<F&, Connection&> query(F f) {
    std::optional<std::invoke_result_t<F&, Connection&>> out;
    run([&](Connection& c) { out.emplace(f(c)); });
    return std::move(*out);
  }
};

// A connection used in place by whichever thread calls; calls are serialised.
class DirectAccess final : public DatabaseAccess {
 public:
  explicit DirectAccess(Connection& c) : c_(c) {}
  void write(DatabaseWork work, std::size_t = 1) override { run(work); }
  void run(const DatabaseWork& work) override {
    std::lock_guard lock(mu_);
    work(c_);
  }
  void flush() override {}
  const std::string& path() const override { return c_.path(); }

 private:
  Connection& c_;
  std::recursive_mutex mu_;  // recursive: a farm's bookkeeping may write while it reads
};

}  // namespace k3store
