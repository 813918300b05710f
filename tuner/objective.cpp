#include "tuner/objective.h"

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <regex>

#include <fmt/format.h>

#include "harness/host/bench/provenance.h"
#include "harness/host/bench/sweep.h"
#include "harness/host/store/results.h"
#include "harness/host/targets/process.h"

namespace k3tuner {
namespace {

// The configuration as the synthetic truth sees it: its parameters plus its measurement knobs.
nlohmann::json visible(const k3bench::CellSpec& cell) {
  nlohmann::json j = cell.params;
  j["path"] = cell.settings.path;
  return j;
}

}  // namespace

TimeObjective::TimeObjective(const k3targets::Target& target, std::string build_hash,
                             k3store::Connection& db, std::string run_uuid, double timeout_s)
    : target_(target),
      build_hash_(std::move(build_hash)),
      run_uuid_(std::move(run_uuid)),
      db_(db),
      timeout_s_(timeout_s) {}

Measurement TimeObjective::measure(const k3bench::CellSpec& cell, int index, int /*round*/) {
  Measurement m;
  m.cell_key = k3bench::cell_key(target_, cell, build_hash_);
  k3store::insert_cell(db_, {m.cell_key, target_.name(), cell.op, cell.shape.dump(),
                             cell.params.dump(), build_hash_, cell.settings.to_json().dump()});
  auto& iterations = iterations_[m.cell_key];
  const bool first = iterations == 0;
  const auto o = k3bench::run_cell_process(
      target_, cell, k3targets::ProcessOptions::with_timeout(timeout_s_), first, iterations);
  k3store::insert_process(db_, {run_uuid_, m.cell_key, index, order_++, o.ok, o.exit_code, o.reason,
                                o.path, o.ok ? o.runner.dump() : "", o.wall_ns, o.kernel_ns,
                                o.disturbed, o.timing.is_null() ? "" : o.timing.dump(), o.samples});
  if (!o.ok) {
    m.rejected = true;
    m.reason = o.reason;
    return m;
  }
  if (iterations == 0) iterations = o.iterations;
  m.value = o.mean_ns();
  m.disturbed = o.disturbed;
  return m;
}

InstructionObjective::InstructionObjective(const k3targets::Target& target, std::string plugin,
                                           std::map<std::string, std::string> env)
    : target_(target), env_(std::move(env)) {
  tools_.plugin = std::move(plugin);
  tools_.timeout_s = 1800;
}

Measurement InstructionObjective::measure(const k3bench::CellSpec& cell, int /*index*/,
                                          int /*round*/) {
  Measurement m;
  // One and nine timed calls, one worker each time: the difference is eight calls, free of
  // set-up, the accuracy check and process start (both processes must run the same check for it
  // to cancel). k3bench::count_process counts as `k3tune count` does (no weight cache, the IME2
  // model left out of an emulation build's count).
  auto count = [&](int calls, std::string& reason) -> double {
    auto args = cell.settings.runner_args(cell, calls);
    bool parked = false;
    for (std::size_t i = 0; i + 1 < args.size(); ++i) {
      if (args[i] == "--reps") args[i + 1] = "1";
      if (args[i] == "--warmup") args[i + 1] = "0";
      // Idle pool threads park at once: a spinning one counts instructions for as long as the
      // main thread takes to hand out work, which depends on the machine's load.
      if (args[i] == "--pool-wait") args[i + 1] = "park", parked = true;
    }
    if (!parked) args.insert(args.end(), {"--pool-wait", "park"});
    const k3bench::CountedProcess p = k3bench::count_process(tools_, target_, args, env_);
    if (!p.ok) {
      reason = p.reason;
      if (p.process.exit_code == 4) reason = "accuracy failure: " + reason;
      return -1;
    }
    return p.total();
  };
  std::string reason;
  // Nine calls against one: the untimed part varies by a few hundred instructions per process
  // (timer reads), which eight calls' difference dilutes eightfold.
  const double one = count(1, reason);
  const double nine = one < 0 ? -1 : count(9, reason);
  if (one < 0 || nine < 0) {
    m.rejected = true;
    m.reason = reason;
    return m;
  }
  if (nine <= one) {
    m.rejected = true;
    m.reason =
        fmt::format("9 calls counted {} instructions, 1 call {}: the set-up differed", nine, one);
    return m;
  }
  m.value = (nine - one) / 8;
  return m;
}

SyntheticObjective::SyntheticObjective(std::function<double(const nlohmann::json&)> truth,
                                       double noise, std::uint64_t seed,
                                       std::function<bool(const nlohmann::json&)> reject)
    : truth_(std::move(truth)), noise_(noise), seed_(seed), reject_(std::move(reject)) {}

Measurement SyntheticObjective::measure(const k3bench::CellSpec& cell, int index, int /*round*/) {
  ++measurements_;
  Measurement m;
  const nlohmann::json params = visible(cell);
  if (reject_ && reject_(params)) {
    m.rejected = true;
    m.reason = "accuracy failure: synthetic";
    return m;
  }
  // Seeded by what is measured, not by when: the same measurement always gives the same number.
  std::seed_seq seq{seed_, std::hash<std::string>{}(params.dump()),
                    static_cast<std::uint64_t>(index)};
  std::mt19937_64 rng(seq);
  m.value = truth_(params) * std::exp(std::normal_distribution<double>(0.0, noise_)(rng));
  return m;
}

}  // namespace k3tuner
