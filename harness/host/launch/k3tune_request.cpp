#include "harness/host/launch/k3tune_request.h"

#include <fmt/format.h>

namespace k3launch {
namespace {

// Appends `--flag value` once per value.
void repeated(Args& a, const char* flag, const std::vector<std::string>& values) {
  for (const auto& v : values) a.insert(a.end(), {flag, v});
}
void optional(Args& a, const char* flag, const std::string& value) {
  if (!value.empty()) a.insert(a.end(), {flag, value});
}
template <typename T>
void optional(Args& a, const char* flag, const std::optional<T>& value) {
  if (value) a.insert(a.end(), {flag, fmt::format("{}", *value)});
}

void place(Args& a, const Place& where) {
  if (const auto* t = std::get_if<OnTarget>(&where)) {
    a.insert(a.end(), {"--target", t->target});
    return;
  }
  const auto& f = std::get<OnFarm>(where);
  a.insert(a.end(), {"--farm", f.farm});
  repeated(a, "--board", f.boards);
  optional(a, "--reservation", f.reservation);
}

void cells(Args& a, const Cells& c) {
  optional(a, "--model", c.model);
  repeated(a, "--op", c.ops);
  repeated(a, "--shape", c.shapes);
  optional(a, "--path", c.path);
}

void plan(Args& a, const Plan& p) {
  optional(a, "--processes", p.processes);
  optional(a, "--target-ci", p.target_ci);
  optional(a, "--reps", p.repetitions);
  optional(a, "--min-time", p.min_time_s);
}

struct ArgumentsOf {
  Args operator()(const Build& r) const { return {"build", "--variant", r.variant}; }
  Args operator()(const FarmProbe& r) const {
    Args a{"farm", "probe", "--farm", r.farm};
    repeated(a, "--board", r.boards);
    return a;
  }
  Args operator()(const FarmReleaseStale& r) const {
    return {"farm", "--farm", r.farm, "release", "--stale"};
  }
  Args operator()(const Bench& r) const {
    Args a{"bench"};
    place(a, r.place);
    if (r.resume) a.push_back("--resume");
    cells(a, r.cells);
    plan(a, r.plan);
    optional(a, "--baseline-runner", r.baseline_runner);
    return a;
  }
  Args operator()(const Tune& r) const {
    Args a{"tune"};
    place(a, r.place);
    optional(a, "--objective", r.objective);
    cells(a, r.cells);
    optional(a, "--strategy", r.strategy);
    optional(a, "--budget", r.budget);
    plan(a, r.plan);
    optional(a, "--out", r.out);
    return a;
  }
  Args operator()(const TableVerify& r) const {
    Args a{"table", "verify"};
    place(a, r.place);
    repeated(a, "--table", r.tables);
    plan(a, r.plan);
    return a;
  }
  Args operator()(const TableValidate& r) const { return {"table", "validate", r.table}; }
  Args operator()(const Count& r) const {
    Args a{"count", "--vlens", r.vlens};
    repeated(a, "--variant", r.variants);
    repeated(a, "--case", r.cases);
    return a;
  }
  Args operator()(const Compare& r) const { return {"compare", r.run_a, r.run_b}; }
  Args operator()(const Report& r) const { return {"report", r.run, "-o", r.out_dir}; }
  Args operator()(const Bisect& r) const {
    return {"bisect", "--from-nightly", r.from_nightly, "--target", r.target};
  }
  Args operator()(const Publish& r) const { return {"publish", r.site}; }
};

struct OutputOf {
  k3bench::ChildOutput operator()(const Bench&) const { return k3bench::ChildOutput::kBench; }
  // A campaign on a farm prints its groups; a tune on one target prints text.
  k3bench::ChildOutput operator()(const Tune& r) const {
    return std::holds_alternative<OnFarm>(r.place) ? k3bench::ChildOutput::kTuneFarm
                                                   : k3bench::ChildOutput::kNone;
  }
  k3bench::ChildOutput operator()(const Count&) const { return k3bench::ChildOutput::kCount; }
  k3bench::ChildOutput operator()(const Bisect&) const { return k3bench::ChildOutput::kBisect; }
  k3bench::ChildOutput operator()(const auto&) const { return k3bench::ChildOutput::kNone; }
};

}  // namespace

k3bench::ChildOutput output_of(const Request& request) {
  return std::visit(OutputOf{}, request);
}

Args arguments(const Request& request) {
  Args a = std::visit(ArgumentsOf{}, request);
  if (output_of(request) != k3bench::ChildOutput::kNone) a.insert(a.begin(), "--json");
  return a;
}

}  // namespace k3launch
