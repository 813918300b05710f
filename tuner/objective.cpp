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
#include "harness/host/store/tuning_sessions.h"
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
    : TimedObjective(target, std::move(build_hash), db),
      run_uuid_(std::move(run_uuid)),
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
  if (!cell.settings.params_b.is_null() && !o.side_means(m.value, m.value_b)) {
    m.rejected = true;
    m.reason = "the runner reported no sides for --params-b (a k3bench older than the option?)";
  }
  return m;
}

InstructionObjective::InstructionObjective(const k3targets::Target& target, std::string plugin,
                                           std::map<std::string, std::string> env)
    : target_(target), env_(std::move(env)) {
  tools_.plugin = std::move(plugin);
  tools_.timeout_s = 1800;
}

std::vector<std::string> InstructionObjective::count_args(const k3bench::CellSpec& cell,
                                                          int calls) {
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
  return args;
}

void InstructionObjective::use_cache(MeasurementCache* cache, std::string build_hash,
                                     bool cache_only) {
  cache_ = cache;
  build_hash_ = std::move(build_hash);
  cache_only_ = cache_only;
}

Measurement InstructionObjective::measure(const k3bench::CellSpec& cell, int /*index*/,
                                          int /*round*/) {
  Measurement m;
  std::optional<ExactIdentity> id;
  if (cache_ != nullptr) {
    id = exact_identity(kMethod, build_hash_, target_.emulator_prefix(), count_args(cell, 1), env_);
    if (const auto v = cache_->find(*id)) {
      m.value = *v;
      m.cached = true;
      return m;
    }
    if (cache_only_) {
      m.rejected = m.unavailable = true;
      m.reason = "replay: never counted (not in the measurement cache)";
      return m;
    }
  }
  // k3bench::count_process counts as `k3tune count` does (a warm weight cache in every counted
  // process, the IME2 model left out of an emulation build's count, every call marked).
  std::string reason;
  auto counted = [&](int calls) -> std::optional<k3bench::CountedProcess> {
    k3bench::CountedProcess p =
        k3bench::count_process(tools_, target_, count_args(cell, calls), env_);
    if (!p.ok) {
      reason = p.reason;
      if (p.process.exit_code == 4) reason = "accuracy failure: " + reason;
      return std::nullopt;
    }
    return p;
  };
  auto reject = [&] {
    m.rejected = true;
    m.reason = reason;
    return m;
  };
  // A runner that marks its calls gives each call's count apart from everything else in its
  // process: the figure is exact, from one process, as `k3tune count` takes it. (A difference of
  // processes also counted what grows with the calls outside them: the runner's JSON lists every
  // marked call, and formatting it cost ten times a small decode call, by a heap-dependent amount.)
  const auto marked = counted(k3bench::kMarkedTimedCalls);
  if (!marked) return reject();
  try {
    if (const auto per_call = k3bench::marked_instructions_per_call(*marked, target_.name())) {
      m.value = *per_call;
      if (id) cache_->put(*id, m.value, session);
      return m;
    }
  } catch (const k3bench::UserError& e) {
    reason = e.what();
    return reject();
  }
  // A runner without marks: one and two (or nine) timed calls, one worker each time; the
  // difference is calls free of set-up, the accuracy check and process start (both processes must
  // run the same check for it to cancel).
  auto count = [&](int calls) -> double {
    const auto p = counted(calls);
    return p ? p->total() : -1;
  };
  // Two calls against one first. The untimed part varies by a few hundred instructions per
  // process (timer reads): against a call of a million instructions or more that is below 0.1%,
  // and a large call under qemu takes seconds (prefill 128 x 2048 x 6144: 8 s per call at VLEN
  // 256). Below that, nine calls against one dilute the variation eightfold.
  const double one = count(1);
  const double two = one < 0 ? -1 : count(2);
  const bool large = two - one >= kLargeCall;
  const double many = one < 0 || two < 0 || large ? two : count(9);
  const int extra_calls = large ? 1 : 8;
  if (one < 0 || two < 0 || many < 0) return reject();
  if (many <= one) {
    m.rejected = true;
    m.reason = fmt::format("{} calls counted {} instructions, 1 call {}: the set-up differed",
                           extra_calls + 1, many, one);
    return m;
  }
  m.value = (many - one) / extra_calls;
  if (id) cache_->put(*id, m.value, session);
  return m;
}

ReplayTimeObjective::ReplayTimeObjective(const k3targets::Target& target, std::string build_hash,
                                         k3store::Connection& db)
    : TimedObjective(target, std::move(build_hash), db) {}

Measurement ReplayTimeObjective::measure(const k3bench::CellSpec& cell, int index, int /*round*/) {
  Measurement m;
  m.cell_key = k3bench::cell_key(target_, cell, build_hash_);
  auto it = stored_.find(m.cell_key);
  if (it == stored_.end()) {
    // Disturbed ones too, flagged as they were: the tuning loop then skips them as it did live, so
    // replaying a session's own strategy sees exactly its numbers.
    std::vector<std::pair<double, bool>> values;
    for (const auto& stored : k3store::stored_measurements_of_cell(db_, m.cell_key))
      values.emplace_back(stored.value, stored.disturbed);
    it = stored_.emplace(m.cell_key, std::move(values)).first;
  }
  if (index < 0 || static_cast<std::size_t>(index) >= it->second.size()) {
    m.rejected = m.unavailable = true;
    m.reason = fmt::format("replay: {} measurements stored for this configuration, #{} asked for",
                           it->second.size(), index + 1);
    return m;
  }
  m.value = it->second[static_cast<std::size_t>(index)].first;
  m.disturbed = it->second[static_cast<std::size_t>(index)].second;
  m.cached = true;
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
