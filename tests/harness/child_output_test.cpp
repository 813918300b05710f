// The forms of k3tune's --json output that other programs read (harness/host/bench/child_output.h)
// against their schema files: each form names its versioned schema, a document that follows it
// passes, and one that drops or retypes a field its readers take is refused with that field named.
// (Each producer's own output is checked against the same files in its command's tests.)
#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/host/bench/child_output.h"

namespace {

using k3bench::ChildOutput;
using nlohmann::json;

std::vector<std::string> problems(ChildOutput kind, const json& doc) {
  return k3bench::child_output_problems(K3TUNE_ROOT, kind, doc);
}

bool mentions(const std::vector<std::string>& lines, const std::string& what) {
  for (const auto& l : lines)
    if (l.find(what) != std::string::npos) return true;
  return false;
}

TEST(ChildOutput, EachFormHasItsVersionedSchemaFile) {
  for (const ChildOutput kind :
       {ChildOutput::kBench, ChildOutput::kTuneFarm, ChildOutput::kCount, ChildOutput::kBisect}) {
    std::ifstream f(k3bench::schema_path(K3TUNE_ROOT, kind));
    ASSERT_TRUE(f) << k3bench::schema_path(K3TUNE_ROOT, kind);
    const json schema = json::parse(f);
    EXPECT_EQ(schema.at("$id"), k3bench::schema_id(kind));
    EXPECT_NE(std::string(k3bench::schema_id(kind)).find("/1"), std::string::npos);
  }
  EXPECT_TRUE(problems(ChildOutput::kNone, json("text")).empty());  // text output: nothing to check
}

TEST(ChildOutput, BenchOutputOnATargetAndOnAFarm) {
  const json target = {{"schema", "k3tune.bench/1"},
                       {"run_uuid", "r1"},
                       {"build_hash", "h"},
                       {"builds", {{{"build_hash", "h"}, {"label", "B"}, {"runner", "/x"}}}},
                       {"cells", {{{"status", "ok"}, {"op", "rmsnorm"}, {"mean_ns", 1.5}}}},
                       {"comparisons", json::array()},
                       {"failed_cells", 0}};
  EXPECT_EQ(problems(ChildOutput::kBench, target), std::vector<std::string>{});
  const json farm = {{"schema", "k3tune.bench/1"},
                     {"sweep_uuid", "s1"},
                     {"runs", {{{"board", "b1"}, {"run_uuid", "r1"}}}},
                     {"quarantined", {{"b2", {{"fault", "unreachable"}, {"reason", "gone"}}}}},
                     {"unused_boards", json::object()},
                     {"cells", {{{"status", "measured"}, {"board", "b1"}}}},
                     {"measured_cells", 1},
                     {"failed_cells", 0},
                     {"samples_before", 0},
                     {"samples_after", 4}};
  EXPECT_EQ(problems(ChildOutput::kBench, farm), std::vector<std::string>{});

  json no_cells = target;
  no_cells.erase("cells");
  EXPECT_TRUE(mentions(problems(ChildOutput::kBench, no_cells), "cells"));
  json retyped = farm;
  retyped["samples_after"] = "4";
  EXPECT_TRUE(mentions(problems(ChildOutput::kBench, retyped), "samples_after"));
  json bad_quarantine = farm;
  bad_quarantine["quarantined"]["b2"].erase("fault");
  EXPECT_TRUE(mentions(problems(ChildOutput::kBench, bad_quarantine), "fault"));
  json next_version = target;
  next_version["schema"] = "k3tune.bench/2";
  EXPECT_FALSE(problems(ChildOutput::kBench, next_version).empty());
  json neither = target;  // neither a run, a sweep nor a scheduler's outcome
  neither.erase("run_uuid");
  EXPECT_FALSE(problems(ChildOutput::kBench, neither).empty());
}

TEST(ChildOutput, TuneFarmCountAndBisectOutputs) {
  const json group = {{"boards", {"b1"}},
                      {"table", "/t/farm.json"},
                      {"objective", "time"},
                      {"lost", json::object()},
                      {"unfinished", json::array()}};
  EXPECT_EQ(
      problems(ChildOutput::kTuneFarm, {{"schema", "k3tune.tune-farm/1"}, {"groups", {group}}}),
      std::vector<std::string>{});
  json no_table = group;
  no_table.erase("table");
  EXPECT_TRUE(mentions(
      problems(ChildOutput::kTuneFarm, {{"schema", "k3tune.tune-farm/1"}, {"groups", {no_table}}}),
      "table"));

  const json row = {{"path", "rvv"},  {"op", "linear_decode"},        {"shape", "n=64,k=64"},
                    {"vlen", 1024},   {"instructions_per_call", 5e4}, {"jitter", 0},
                    {"run_uuid", "r"}};
  EXPECT_EQ(problems(ChildOutput::kCount, json::array({row})), std::vector<std::string>{});
  json text_vlen = row;
  text_vlen["vlen"] = "1024";
  EXPECT_TRUE(mentions(problems(ChildOutput::kCount, json::array({text_vlen})), "vlen"));
  EXPECT_FALSE(problems(ChildOutput::kCount, row).empty());  // a row alone is not the array

  const json bisect = {{"schema", "k3tune.bisect/1"},
                       {"bisection_id", "b1"},
                       {"good", "a"},
                       {"bad", "b"},
                       {"status", "found"},
                       {"candidates", {"c"}},
                       {"probes", {{{"commit", "c"}, {"outcome", "bad"}}}}};
  EXPECT_EQ(problems(ChildOutput::kBisect, bisect), std::vector<std::string>{});
  json unknown_status = bisect;
  unknown_status["status"] = "maybe";
  EXPECT_TRUE(mentions(problems(ChildOutput::kBisect, unknown_status), "status"));
}

}  // namespace
