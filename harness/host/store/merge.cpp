#include <sys/stat.h>

#include <fmt/format.h>

#include "harness/host/store/database.h"
#include "harness/host/store/maintenance.h"

namespace k3store {
namespace {

// Parents before children, so foreign keys hold at every insert.
// farm_quarantine and farm_probes belong to a run's record; farm_board_events is the boards' state
// across runs (an event log: the union of two logs is the state both controllers saw);
// farm_leases is live state of one controller and is never merged.
const char* const kTablesInOrder[] = {"builds",
                                      "runs",
                                      "cells",
                                      "processes",
                                      "samples",
                                      "aggregates",
                                      "noise_floors",
                                      "farm_quarantine",
                                      "farm_probes",
                                      "farm_board_events",
                                      "tuning_sessions",
                                      "tuning_measurements",
                                      "tuning_points",
                                      "tuning_tables",
                                      "target_probes",
                                      "farm_sweep_cells",
                                      "nightly_steps",
                                      "nightlies",
                                      "exact_measurements",
                                      "bisections",
                                      "bisection_probes"};

bool same_file(const std::string& a, const std::string& b) {
  struct stat sa {
  }, sb{};
  return stat(a.c_str(), &sa) == 0 && stat(b.c_str(), &sb) == 0 && sa.st_dev == sb.st_dev &&
         sa.st_ino == sb.st_ino;
}

}  // namespace

std::map<std::string, long long> merge_databases(const std::string& dest,
                                                 const std::vector<std::string>& shards) {
  for (const auto& shard : shards) {
    if (same_file(shard, dest))
      throw StoreError(fmt::format("{}: cannot merge a database into itself", shard));
    open_database(shard,
                  OpenMode::kReadOnly);  // validates: k3tune database, current schema, intact
  }
  auto c = open_database(dest, OpenMode::kCreateOrUpdate);
  std::map<std::string, long long> added;
  for (const char* t : kTablesInOrder) added[t] = 0;
  for (const auto& shard : shards) {
    auto attach = c->prepare("ATTACH DATABASE ?1 AS shard");
    attach.bind(1, shard);
    attach.run();
    try {
      Transaction tx(*c);
      for (const char* t : kTablesInOrder) {
        // Natural primary keys make this idempotent: a row already present is skipped.
        c->exec(fmt::format("INSERT OR IGNORE INTO main.{0} SELECT * FROM shard.{0}", t));
        added[t] += c->changes();
      }
      tx.commit();
    } catch (...) {
      c->exec("DETACH DATABASE shard");
      throw;
    }
    c->exec("DETACH DATABASE shard");
  }
  return added;
}

}  // namespace k3store
