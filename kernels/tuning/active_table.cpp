// The process's tuning table: loaded once (API or K3_TUNING_TABLE), then read without locks.
// Replaced tables are kept (never freed): a pointer an engine took from an earlier lookup stays
// valid, and loading is refused while an "auto" call runs, so no call sees two tables.
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <sstream>
#include <vector>

#include <fmt/format.h>

#include "k3k/tuning.h"

namespace k3k {
namespace {

std::mutex g_mutex;  // loads only
std::atomic<const TuningTable*> g_active{nullptr};
std::atomic<int> g_in_flight{0};
std::once_flag g_env_once;
std::vector<std::unique_ptr<TuningTable>>& kept() {
  static std::vector<std::unique_ptr<TuningTable>> tables;
  return tables;
}
TableLoad& last() {
  static TableLoad l;
  return l;
}

TableLoad load_locked(const std::string& path) {
  TableLoad r;
  r.source = path;
  std::ifstream f(path, std::ios::binary);
  if (!f) {
    r.problem = "cannot be read";
  } else {
    std::ostringstream s;
    s << f.rdbuf();
    auto table = TuningTable::parse(s.str(), running_board(), r.problem);
    if (table) {
      r.loaded = true;
      r.entries = table->entries().size();
      g_active.store(table.get(), std::memory_order_release);
      kept().push_back(std::move(table));
    }
  }
  if (!r.problem.empty())
    std::fprintf(stderr, "k3k: tuning table %s: %s; using the built-in defaults\n", path.c_str(), r.problem.c_str());
  last() = r;
  return r;
}

void load_from_environment() {
  std::call_once(g_env_once, [] {
    const char* path = std::getenv("K3_TUNING_TABLE");
    if (path == nullptr || *path == '\0') return;
    std::lock_guard lock(g_mutex);
    if (g_active.load() == nullptr && last().source.empty()) load_locked(path);
  });
}

}  // namespace

TableLoad load_tuning_table(const std::string& path) {
  std::call_once(g_env_once, [] {});  // an explicit load wins over the environment
  std::lock_guard lock(g_mutex);
  if (g_in_flight.load() != 0) {
    TableLoad r{false, path, "refused: kernels that consult the table are running on other threads", 0};
    std::fprintf(stderr, "k3k: tuning table %s: %s\n", path.c_str(), r.problem.c_str());
    return r;
  }
  return load_locked(path);
}

void clear_tuning_table() {
  std::call_once(g_env_once, [] {});
  std::lock_guard lock(g_mutex);
  if (g_in_flight.load() != 0) {
    std::fprintf(stderr, "k3k: clear_tuning_table refused: kernels that consult the table are running\n");
    return;
  }
  g_active.store(nullptr, std::memory_order_release);
  last() = {};
}

const TuningTable* active_tuning_table() {
  load_from_environment();
  return g_active.load(std::memory_order_acquire);
}

TableLoad last_table_load() {
  load_from_environment();
  std::lock_guard lock(g_mutex);
  return last();
}

TuningTableUse::TuningTableUse() {
  load_from_environment();
  // No lock in the call path: the count makes a concurrent load refuse itself, and the call reads
  // the table pointer once, so it sees one whole table whichever way a race with a load goes.
  g_in_flight.fetch_add(1);
  table_ = g_active.load(std::memory_order_acquire);
}

TuningTableUse::~TuningTableUse() { g_in_flight.fetch_sub(1); }

}  // namespace k3k
