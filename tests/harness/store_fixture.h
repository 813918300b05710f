// A fresh results database on a real SQLite file per test (opened for writing as every command
// opens it), and small writers of the rows the store's read functions are tested on.
#pragma once

#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/host/store/database.h"
#include "harness/host/store/results.h"
#include "tests/support/scratch_dir.h"

class StoreFile : public ::testing::Test {
 protected:
  void SetUp() override { db_ = k3store::open_for_writing((dir_ / "results.db").string()); }
  k3store::Connection& db() { return *db_; }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  void build(const std::string& hash, const std::string& revision = "abc", bool dirty = false,
             const std::string& variant = "host") {
    k3store::upsert_build(db(), {hash, variant, "/bin/" + hash, "g++ 12", "-O3", "{}", revision,
                                 dirty, "k3tune build"});
  }
  // A run of `build_hash` whose round order is `cells` (each inserted as a cell of that build).
  void run(const std::string& uuid, const std::string& build_hash,
           const std::vector<std::string>& cells, const std::string& target = "local",
           const std::string& settings_json = "{}") {
    nlohmann::json order = cells;
    k3store::insert_run(db(), {uuid, "k3tune bench", target, build_hash, "host", order.dump(), 2, 2,
                               1, settings_json});
    for (const auto& key : cells)
      k3store::insert_cell(db(),
                           {key, target, "linear_decode", R"({"k":256,"n":64})",
                            R"({"tile":)" + std::to_string(key.size()) + "}", build_hash, "{}"});
  }
  // A successful process with samples `ns` and runner report `runner_json`.
  void process(const std::string& run, const std::string& cell, int index,
               const std::vector<double>& ns, const std::string& runner_json = "{}",
               bool disturbed = false, bool ok = true) {
    k3store::ProcessRecord p;
    p.run_uuid = run, p.cell_key = cell, p.process_index = index, p.order_index = index;
    p.ok = ok, p.exit_code = ok ? 0 : 1, p.path = "rvv", p.runner_json = runner_json;
    p.disturbed = disturbed;
    for (double v : ns) {
      k3store::SampleRecord s;
      s.ns = v, s.cpu_ns = v, s.iterations = 4;
      p.samples.push_back(s);
    }
    k3store::insert_process(db(), p);
  }
  void aggregate(const std::string& run, const std::string& cell, double mean, bool ok = true,
                 int processes = 2, int excluded = 0, const std::string& source_runs = "[]") {
    k3store::AggregateRecord a;
    a.run_uuid = run, a.cell_key = cell, a.ok = ok, a.processes = processes;
    a.excluded_processes = excluded, a.source_runs_json = source_runs, a.method = "t";
    a.reason = ok ? "" : "cells failed";
    a.mean_ns = mean, a.ci_low_ns = mean - 1, a.ci_high_ns = mean + 1, a.median_ns = mean;
    k3store::insert_aggregate(db(), a);
  }

  k3test::ScratchDir dir_{"k3store_family_"};
  std::unique_ptr<k3store::Connection> db_;  // after dir_: closed before the folder goes
};
