#include "harness/host/store/database_writer.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace k3store {

std::string WriteLatency::summary() const {
  return fmt::format(
      "{} writes ({} rows) in {} batches; enqueue to commit p50 {:.1f} ms, p99 {:.1f} ms, max "
      "{:.1f} ms{}",
      writes, rows, batches, p50_ms, p99_ms, max_ms,
      dropped > 0 ? fmt::format("; {} writes not stored", dropped) : "");
}

DatabaseWriter::DatabaseWriter(std::unique_ptr<Connection> connection, WriterOptions options)
    : connection_(std::move(connection)), options_(options), thread_([this] { loop(); }) {}

DatabaseWriter::~DatabaseWriter() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  queued_cv_.notify_all();
  thread_.join();
}

void DatabaseWriter::enqueue(Item item) {
  std::unique_lock lock(mu_);
  if (!failure_.empty() && !item.clears) throw StoreError(failure_);
  // Back-pressure: wait for room (an item larger than the whole queue goes in alone).
  space_cv_.wait(lock, [&] {
    return queue_.empty() || queued_rows_ + item.rows <= options_.queue_rows || item.clears;
  });
  if (!failure_.empty() && !item.clears) throw StoreError(failure_);
  item.queued = Clock::now();
  queued_rows_ += item.rows;
  if (item.done) ++queued_waiters_;
  queue_.push_back(std::move(item));
  lock.unlock();
  queued_cv_.notify_all();
}

void DatabaseWriter::write(DatabaseWork work, std::size_t rows) {
  Item item;
  item.work = std::move(work);
  item.rows = std::max<std::size_t>(rows, 1);
  enqueue(std::move(item));
}

void DatabaseWriter::run(const DatabaseWork& work) {
  Item item;
  item.work = work;
  item.done = std::make_shared<std::promise<void>>();
  auto answered = item.done->get_future();
  enqueue(std::move(item));
  answered.get();  // rethrows the batch's failure
}

void DatabaseWriter::clear_failure() {
  Item item;
  item.clears = true;
  item.done = std::make_shared<std::promise<void>>();
  auto answered = item.done->get_future();
  enqueue(std::move(item));
  answered.get();
}

std::string DatabaseWriter::failure() const {
  std::lock_guard lock(mu_);
  return failure_;
}

WriteLatency DatabaseWriter::latency() const {
  std::vector<double> ms;
  WriteLatency out;
  {
    std::lock_guard lock(mu_);
    ms = latencies_ms_;
    out.rows = rows_;
    out.batches = batches_;
    out.dropped = dropped_;
  }
  out.writes = ms.size();
  if (ms.empty()) return out;
  std::sort(ms.begin(), ms.end());
  // Nearest rank: the smallest value with at least p of the writes at or below it.
  const auto rank = [&](double p) {
    const auto i = static_cast<std::size_t>(std::ceil(p * static_cast<double>(ms.size())));
    return ms[std::min(ms.size(), std::max<std::size_t>(i, 1)) - 1];
  };
  out.p50_ms = rank(0.50);
  out.p99_ms = rank(0.99);
  out.max_ms = ms.back();
  return out;
}

std::vector<DatabaseWriter::Item> DatabaseWriter::next_batch() {
  std::unique_lock lock(mu_);
  queued_cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
  if (queue_.empty()) return {};
  // Linger for more rows while nobody waits for this batch and its oldest write is young.
  const auto deadline =
      queue_.front().queued + std::chrono::duration_cast<Clock::duration>(
                                  std::chrono::duration<double>(options_.max_delay_s));
  queued_cv_.wait_until(lock, deadline, [&] {
    return stop_ || queued_waiters_ > 0 || queued_rows_ >= options_.batch_rows;
  });
  std::vector<Item> batch;
  std::size_t rows = 0;
  while (!queue_.empty() && (batch.empty() || rows + queue_.front().rows <= options_.batch_rows)) {
    Item item = std::move(queue_.front());
    queue_.pop_front();
    rows += item.rows;
    queued_rows_ -= item.rows;
    if (item.done) --queued_waiters_;
    batch.push_back(std::move(item));
  }
  lock.unlock();
  space_cv_.notify_all();
  return batch;
}

void DatabaseWriter::store(std::vector<Item>& batch) {
  std::string failed;
  {
    std::lock_guard lock(mu_);
    failed = failure_;
  }
  bool stored = false;
  if (failed.empty() && !(batch.size() == 1 && batch.front().clears)) {
    try {
      Transaction tx(*connection_);
      for (auto& item : batch)
        if (item.work) item.work(*connection_);
      tx.commit();
      stored = true;
    } catch (const std::exception& e) {
      failed = e.what();
    }
  }
  const auto now = Clock::now();
  std::lock_guard lock(mu_);
  if (stored) {
    ++batches_;
    for (const auto& item : batch) {
      if (item.done) continue;
      rows_ += item.rows;
      latencies_ms_.push_back(std::chrono::duration<double, std::milli>(now - item.queued).count());
    }
  } else if (!failed.empty()) {
    if (failure_.empty()) failure_ = failed;
    for (const auto& item : batch) dropped_ += item.done == nullptr;
  }
  for (auto& item : batch) {
    if (!item.done) continue;
    if (item.clears) {
      failure_.clear();
      item.done->set_value();
    } else if (stored) {
      item.done->set_value();
    } else {
      item.done->set_exception(std::make_exception_ptr(StoreError(failure_)));
    }
  }
}

void DatabaseWriter::loop() {
  for (;;) {
    auto batch = next_batch();
    if (batch.empty()) return;  // stopped, nothing left
    store(batch);
  }
}

}  // namespace k3store
