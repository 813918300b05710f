// What a program that drives k3tune as a child (the nightly's steps) asks of it, as typed
// requests: one struct per subcommand it runs, turned into that subcommand's arguments in one
// place. Each request knows the form of what its child prints (child_output.h), so the driver
// checks the child's output against the form its own request implies.
//
// The flags written here are the ones apps/cli parses; the launcher's round-trip test
// (tests/harness/launch_roundtrip_test.cpp) parses every request's arguments back with the real
// k3tune command line, so a renamed or removed flag fails there and not at 3 a.m.
#pragma once

#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "harness/host/bench/child_output.h"

namespace k3launch {

using Args = std::vector<std::string>;

// The boards of a farm (a farm file, or "local": the built-in farm), optionally only some, and the
// Slurm reservation its jobs run in ("" : the farm file's own, if any).
struct OnFarm {
  std::string farm;
  std::vector<std::string> boards{};
  std::string reservation{};
};
// One target of the targets file.
struct OnTarget {
  std::string target;
};
using Place = std::variant<OnFarm, OnTarget>;

// Which cells: a model's shapes, or ops at given shapes; a kernel path ("" : auto).
struct Cells {
  std::string model{};
  std::vector<std::string> ops{};
  std::vector<std::string> shapes{};
  std::string path{};
};

// How each configuration is measured; an unset field keeps the subcommand's default.
struct Plan {
  std::optional<int> processes{};
  std::optional<double> target_ci{};  // 0: exactly `processes`, no adaptive growth
  std::optional<int> repetitions{};
  std::optional<double> min_time_s{};
};

struct Build {
  std::string variant;
};
struct FarmProbe {
  std::string farm;
  std::vector<std::string> boards{};  // empty: every board
};
// Recovers the leases that holders which died left behind.
struct FarmReleaseStale {
  std::string farm;
};
struct Bench {
  Place place;
  Cells cells;
  Plan plan{};
  bool resume = false;
  std::string baseline_runner{};  // "" : one build
};
struct Tune {
  Place place;
  Cells cells;
  std::string objective{};  // "" : the subcommand's default
  std::string strategy{};
  std::string budget{};
  Plan plan{};
  std::string out{};
};
struct TableVerify {
  Place place;
  std::vector<std::string> tables;
  Plan plan{};
};
struct TableValidate {
  std::string table;
};
struct Count {
  std::string vlens;
  std::vector<std::string> variants;
  std::vector<std::string> cases;  // "<op> <shape>"
};
struct Compare {
  std::string run_a, run_b;
};
struct Report {
  std::string run, out_dir;
};
struct Bisect {
  std::string from_nightly, target;
};
struct Publish {
  std::string site;
};

using Request = std::variant<Build, FarmProbe, FarmReleaseStale, Bench, Tune, TableVerify,
                             TableValidate, Count, Compare, Report, Bisect, Publish>;

// What the child prints on stdout: a versioned JSON form, or text (kNone).
k3bench::ChildOutput output_of(const Request& request);

// The subcommand and its arguments, with the global --json first where the request's child prints
// a JSON form: what follows `k3tune <globals>` on the child's command line.
Args arguments(const Request& request);

}  // namespace k3launch
