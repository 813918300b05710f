// The one database writer (database_writer.h) on a real SQLite file: many threads' rows are all
// stored, in each thread's order, in fewer transactions than writes; a query returns only once the
// rows written before it are committed (another connection sees them); a batch the database does
// not take is a failure that refuses every later row until cleared, and loses only what was not
// committed; a writer that gets ahead of the database waits (bounded queue).
#include <gtest/gtest.h>

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <thread>
#include <vector>

#include "harness/host/store/database.h"
#include "harness/host/store/database_writer.h"
#include "tests/support/scratch_dir.h"

namespace fs = std::filesystem;

namespace {

class DatabaseWriterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto c = k3store::open_database(db(), k3store::OpenMode::kCreateOrUpdate);
    c->exec("CREATE TABLE scratch(thread INTEGER, seq INTEGER)");
  }
  std::string db() const { return (dir_ / "results.db").string(); }

  // A writer whose connection waits `busy_ms` for another connection's lock.
  std::unique_ptr<k3store::DatabaseWriter> writer(int busy_ms, k3store::WriterOptions o = {}) {
    auto c = k3store::open_database(db(), k3store::OpenMode::kCreateOrUpdate);
    c->exec("PRAGMA busy_timeout = " + std::to_string(busy_ms));
    return std::make_unique<k3store::DatabaseWriter>(std::move(c), o);
  }
  static k3store::DatabaseWork row(int thread, int seq) {
    return [thread, seq](k3store::Connection& c) {
      auto s = c.prepare("INSERT INTO scratch(thread, seq) VALUES (?1, ?2)");
      s.bind(1, thread).bind(2, seq);
      s.run();
    };
  }
  std::int64_t count(const std::string& where = "1") {
    return k3store::open_database(db(), k3store::OpenMode::kCreateOrUpdate)
        ->scalar_int("SELECT count(*) FROM scratch WHERE " + where);
  }
  k3test::ScratchDir dir_{"k3writer_test_"};
};

TEST_F(DatabaseWriterTest, ManyThreadsRowsAreStoredInOrderAndQueriesSeeCommittedRows) {
  constexpr int kThreads = 50, kRows = 200;
  auto w = writer(30000);
  auto other = k3store::open_database(db(), k3store::OpenMode::kCreateOrUpdate);
  std::mutex other_mu;
  std::atomic<int> unseen{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < kRows; ++i) {
        w->write(row(t, i));
        if (i % 50 != 49) continue;
        // The query answers from the writer's connection after this thread's rows ...
        const auto last = w->query([&](k3store::Connection& c) {
          return c.scalar_int("SELECT max(seq) FROM scratch WHERE thread = " + std::to_string(t));
        });
        EXPECT_EQ(last, i);
        // ... and returns only once they are committed: another connection sees them.
        std::lock_guard lock(other_mu);
        unseen += other->scalar_int("SELECT count(*) FROM scratch WHERE thread = " +
                                    std::to_string(t)) != i + 1;
      }
    });
  for (auto& t : threads) t.join();
  w->flush();
  EXPECT_EQ(unseen, 0);
  EXPECT_EQ(count(), kThreads * kRows);
  // In each thread's order: rowid order within a thread follows seq.
  EXPECT_EQ(count("EXISTS (SELECT 1 FROM scratch s2 WHERE s2.thread = scratch.thread AND "
                  "s2.seq < scratch.seq AND s2.rowid > scratch.rowid)"),
            0);
  const auto l = w->latency();
  std::printf("%d threads x %d rows: %s\n", kThreads, kRows, l.summary().c_str());
  EXPECT_EQ(l.writes, static_cast<std::size_t>(kThreads * kRows));
  EXPECT_LT(l.batches, l.writes / 4);  // batched: far fewer transactions than rows
  EXPECT_LE(l.p50_ms, l.p99_ms);
  EXPECT_LE(l.p99_ms, l.max_ms);
}

TEST_F(DatabaseWriterTest, AFailedBatchRefusesLaterRowsUntilClearedAndLosesNothingCommitted) {
  auto w = writer(200);
  w->write(row(1, 1));
  w->flush();  // committed
  sqlite3* lock = nullptr;
  ASSERT_EQ(sqlite3_open(db().c_str(), &lock), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(lock, "BEGIN EXCLUSIVE", nullptr, nullptr, nullptr), SQLITE_OK);
  w->write(row(1, 2));  // its batch cannot take the lock: lost, never reported committed
  try {
    w->flush();
    ADD_FAILURE() << "flush succeeded under an exclusive lock";
  } catch (const k3store::StoreError& e) {
    EXPECT_NE(std::string(e.what()).find("database is locked"), std::string::npos) << e.what();
  }
  EXPECT_NE(w->failure().find("database is locked"), std::string::npos);
  // Every later row is refused at once: it might depend on the lost one.
  EXPECT_THROW(w->write(row(1, 3)), k3store::StoreError);
  EXPECT_THROW(w->query([](k3store::Connection& c) { return c.scalar_int("SELECT 1"); }),
               k3store::StoreError);
  sqlite3_exec(lock, "ROLLBACK", nullptr, nullptr, nullptr);
  sqlite3_close(lock);
  w->clear_failure();  // the caller's clean-up rows, after every writing thread stopped
  w->write(row(1, 4));
  w->flush();
  EXPECT_EQ(count("thread = 1 AND seq = 1"), 1);
  EXPECT_EQ(count("thread = 1 AND seq IN (2, 3)"), 0);
  EXPECT_EQ(count("thread = 1 AND seq = 4"), 1);
  EXPECT_EQ(w->latency().dropped, 1u);
}

TEST_F(DatabaseWriterTest, AWriterAheadOfTheDatabaseWaitsForRoom) {
  k3store::WriterOptions o;
  o.queue_rows = 10;
  o.batch_rows = 10;
  auto w = writer(10000, o);
  sqlite3* lock = nullptr;
  ASSERT_EQ(sqlite3_open(db().c_str(), &lock), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(lock, "BEGIN EXCLUSIVE", nullptr, nullptr, nullptr), SQLITE_OK);
  std::atomic<int> handed{0};
  std::thread producer([&] {
    for (int i = 0; i < 100; ++i) {
      w->write(row(2, i));
      ++handed;
    }
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const int while_locked = handed;  // one batch waiting for the lock, one queue full
  sqlite3_exec(lock, "ROLLBACK", nullptr, nullptr, nullptr);
  sqlite3_close(lock);
  producer.join();
  w->flush();
  std::printf("rows handed over while the database was locked: %d (queue of 10 rows)\n",
              while_locked);
  EXPECT_LE(while_locked, 2 * 10 + 1);
  EXPECT_EQ(count("thread = 2"), 100);
}

}  // namespace
