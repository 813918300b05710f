#include "tuner/tuning.h"

#include "harness/host/stats/round_pairs.h"

#include <cmath>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <boost/math/distributions/students_t.hpp>

#include "harness/common/params/param_spec.h"
#include "harness/host/bench/user_error.h"

namespace k3tuner {

// 95% interval of exp(mean log ratio) from per-round pairs, or from two independent samples.
void speedup_interval(const Candidate& chosen, const Candidate& def, Evidence& e) {
  std::vector<double> d;
  const auto pairs = k3stats::pair_by_round(chosen.rounds, chosen.values, def.rounds, def.values);
  for (std::size_t i = 0; i < pairs.a.size(); ++i) d.push_back(std::log(pairs.b[i] / pairs.a[i]));
  e.paired_rounds = &chosen == &def ? chosen.measurements() : static_cast<int>(d.size());
  if (d.size() >= 2) {
    const auto ci = k3stats::t_interval(d);
    e.speedup = std::exp(ci.mean);
    e.speedup_low = std::exp(ci.low);
    e.speedup_high = std::exp(ci.high);
    e.paired = true;
    return;
  }
  e.speedup = e.default_mean / e.mean;
  std::vector<double> la, lb;
  for (double v : chosen.values) la.push_back(std::log(v));
  for (double v : def.values) lb.push_back(std::log(v));
  if (la.size() < 2 || lb.size() < 2) {
    e.speedup_low = e.speedup_high = e.speedup;
    return;
  }
  const double va = std::pow(k3stats::sample_stddev(la), 2) / double(la.size());
  const double vb = std::pow(k3stats::sample_stddev(lb), 2) / double(lb.size());
  const double se = std::sqrt(va + vb);
  const double df = se == 0
                        ? 1
                        : (va + vb) * (va + vb) /
                              (va * va / double(la.size() - 1) + vb * vb / double(lb.size() - 1));
  const double t = se == 0 ? 0 : k3stats::t_critical(0.95, df);
  const double m = k3stats::mean(lb) - k3stats::mean(la);
  e.speedup = std::exp(m);
  e.speedup_low = std::exp(m - t * se);
  e.speedup_high = std::exp(m + t * se);
}

nlohmann::json Evidence::to_json() const {
  return {{"mean_ns", mean},        {"ci95_ns", {ci_low, ci_high}},
          {"processes", processes}, {"default_mean_ns", default_mean},
          {"speedup", speedup},     {"speedup_ci95", {speedup_low, speedup_high}},
          {"paired", paired},       {"paired_rounds", paired_rounds},
          {"exact", exact}};
}

k3bench::CellSpec cell_of(const TuneRequest& r, const Config& config) {
  const k3bench::OpSpec& op = r.catalog->op(r.space->op(), r.space->file());
  std::map<std::string, std::string> params = r.fixed;
  k3bench::CellSpec cell;
  cell.op = op.name;
  cell.shape = r.shape;
  cell.settings = r.settings;
  for (const auto& knob : r.space->knobs()) {
    const std::string value = k3params::value_text(config.at(knob.name));
    if (knob.measurement)
      cell.settings.set(knob.name, value, r.space->file());
    else
      params[knob.name] = value;
  }
  cell.params = r.catalog->normalise(op, params, false, r.space->file());
  return cell;
}

std::vector<k3store::TuningPointRecord> TuneResult::point_records(const std::string& op) const {
  std::vector<k3store::TuningPointRecord> out;
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    const Candidate& c = candidates[i];
    if (c.values.empty() && !c.rejected) continue;
    k3store::TuningPointRecord p;
    p.point_key = c.key;
    p.op = op;
    p.shape_json = cells[i].shape.dump();
    p.config_json = c.config.dump();
    p.status = c.rejected ? "rejected" : "measured";
    p.reason = c.reason;
    p.processes = c.measurements();
    if (!c.values.empty()) {
      const auto ci = k3stats::t_interval(c.values);
      p.mean_ns = ci.mean;
      if (std::isfinite(ci.half_width)) {
        p.ci_low_ns = ci.low;
        p.ci_high_ns = ci.high;
      }
    }
    out.push_back(std::move(p));
  }
  return out;
}

nlohmann::json TuneResult::to_json() const {
  nlohmann::json j = {{"measurements", measurements},
                      {"budget_exhausted", budget_exhausted},
                      {"summary", summary},
                      {"space", {{"product", counts.product}, {"enumerated", counts.enumerated}}}};
  if (counts.enumerated) {
    j["space"]["distinct"] = counts.distinct;
    j["space"]["valid"] = counts.valid;
    j["space"]["excluded_by_flags"] = counts.excluded_by_flags;
  }
  if (chosen != SIZE_MAX) {
    j["chosen"] = candidates[chosen].config;
    j["evidence"] = evidence.to_json();
  }
  if (defaults != SIZE_MAX) j["defaults"] = candidates[defaults].config;
  int rejected = 0;
  for (const auto& c : candidates) rejected += c.rejected;
  j["rejected"] = rejected;
  return j;
}

namespace {

// --seed-table: only the configurations that hold the seed's knobs are searched (the defaults
// stay, as the evidence's reference); none holding them means the seed does not fit here and the
// whole space is searched. Either way the result's note says which.
void keep_held(const TuneRequest& r, const std::string& default_key, std::vector<Config>& configs,
               std::string& seed_note) {
  const auto holds = [&](const Config& c) {
    for (const auto& [k, v] : r.hold)
      if (c.contains(k) && c.at(k) != v) return false;
    return true;
  };
  std::vector<Config> kept;
  std::size_t matching = 0;
  for (const auto& c : configs) {
    const bool h = holds(c);
    matching += h;
    if (h || config_key(c) == default_key) kept.push_back(c);
  }
  std::vector<std::string> held;
  for (const auto& [k, v] : r.hold)
    held.push_back(k + "=" + (v.is_string() ? v.get<std::string>() : v.dump()));
  if (matching > 0) {
    seed_note = fmt::format("seeded: {} held, {} of {} configurations searched",
                            fmt::join(held, ","), matching, configs.size());
    configs = std::move(kept);
  } else {
    seed_note = fmt::format("seed point {} is not valid here: the whole space is searched",
                            fmt::join(held, ","));
  }
}

// The candidates (and their cells) the strategy chooses from: the space's valid configurations
// less the excluded ones, narrowed to a seed's held knobs.
void add_candidates(const TuneRequest& r, TuneResult& res) {
  std::vector<Config> configs = r.space->enumerate(r.facts, r.flags, &res.counts);
  std::erase_if(configs, [&](const Config& c) { return r.exclude.contains(config_key(c)); });
  if (configs.empty())
    throw k3bench::UserError(
        fmt::format("{}: no valid configuration for this shape and target", r.space->file()));
  const std::string default_key = config_key(r.space->defaults(r.facts));
  if (!r.hold.empty()) keep_held(r, default_key, configs, res.seed_note);
  for (const auto& c : configs) {
    Candidate cand;
    cand.config = c;
    cand.key = config_key(c);
    if (cand.key == default_key) {
      res.defaults = res.candidates.size();
      cand.is_default = true;
    }
    res.candidates.push_back(std::move(cand));
    res.cells.push_back(cell_of(r, c));
  }
}

// The strategy the request names, except that coordinate descent on a small space would measure
// more than trying everything: it is raced instead, and `note` says why.
std::string strategy_to_run(const TuneRequest& r, const std::vector<Candidate>& candidates,
                            const StrategyOptions& options, std::string& note) {
  if (r.strategy != "coordinate" || options.deterministic ||
      coordinate_cost_bound(*r.space, candidates, options) < exhaustive_cost(candidates, options))
    return r.strategy;
  note = fmt::format(
      "coordinate descent could cost {} measurements here, exhaustive {}: raced instead; ",
      coordinate_cost_bound(*r.space, candidates, options), exhaustive_cost(candidates, options));
  return "racing";
}

// Takes the session's measurements one at a time: the stored one when the session has it, else a
// new one (stored as it is taken). No strategy spends more than exhaustive search would (disturbed
// processes measured again aside), nor more than the request's budget.
class SessionMeasurements {
 public:
  SessionMeasurements(const TuneRequest& r, Objective& objective,
                      k3store::TuningSessionStore* store, const std::string& session_id,
                      const StrategyOptions& options, TuneResult& res)
      : r_(r),
        objective_(objective),
        store_(store),
        session_id_(session_id),
        deterministic_(options.deterministic),
        res_(res),
        cap_(exhaustive_cost(res.candidates, options)) {
    // Stored measurements of this session, by (configuration, attempt): replayed in order.
    if (store != nullptr)
      for (auto& m : store->measurements(session_id)) stored_[{m.point_key, m.measurement}] = m;
  }

  int cap() const { return cap_; }
  bool capped() const { return capped_; }

  // One measurement of candidate i in `round`. False when the budget or the cap stopped it.
  bool measure_one(std::size_t i, int round) {
    Candidate& cand = res_.candidates[i];
    for (bool retried = false;;) {
      if (r_.budget > 0 && res_.measurements >= r_.budget) {
        res_.budget_exhausted = true;
        return false;
      }
      if (counted_ >= cap_) {
        capped_ = true;
        return false;
      }
      const int attempt = attempts_[i]++;
      k3store::TuningMeasurementRecord m;
      if (auto it = stored_.find({cand.key, attempt}); it != stored_.end()) {
        m = it->second;
      } else if (!measure_new(i, attempt, round, m)) {
        return false;
      }
      ++res_.measurements;
      if (m.rejected) {
        cand.rejected = true;
        cand.reason = m.reason;
        ++counted_;
        return true;
      }
      if (m.disturbed && !retried) {
        retried = true;
        ++res_.disturbed;
        continue;
      }
      cand.values.push_back(m.value);
      cand.rounds.push_back(round);
      ++counted_;
      return true;
    }
  }

 private:
  // A new measurement from the objective, stored. False when a replay ran out of stored ones.
  bool measure_new(std::size_t i, int attempt, int round, k3store::TuningMeasurementRecord& m) {
    const Candidate& cand = res_.candidates[i];
    if (r_.stop_after && res_.new_measurements >= *r_.stop_after)
      throw TuningInterrupted(
          fmt::format("stopped after {} new measurements", res_.new_measurements));
    if (r_.progress) r_.progress(res_.measurements, cand.key);
    const Measurement got = objective_.measure(res_.cells[i], attempt, round);
    // Replaying a noisy objective past what the store holds: the search stops there, as at a
    // budget, and chooses on what it had (dropping the candidate would change the choice).
    if (got.unavailable && !deterministic_) {
      ++res_.unavailable;
      res_.replay_exhausted = true;
      return false;
    }
    m = {cand.key,      attempt,      round,      got.value,
         got.disturbed, got.rejected, got.reason, got.cell_key};
    if (store_ != nullptr) store_->add(session_id_, m);
    ++res_.new_measurements;
    res_.cache_hits += got.cached;
    res_.unavailable += got.unavailable;
    return true;
  }

  const TuneRequest& r_;
  Objective& objective_;
  k3store::TuningSessionStore* store_;
  const std::string& session_id_;
  const bool deterministic_;
  TuneResult& res_;
  std::map<std::pair<std::string, int>, k3store::TuningMeasurementRecord> stored_;
  std::map<std::size_t, int> attempts_;
  const int cap_;
  int counted_ = 0;
  bool capped_ = false;
};

// The strategy's rounds until it asks for nothing more or a measurement is refused (budget, cap,
// replay run out). Returns the last round.
int run_rounds(Strategy& strategy, SessionMeasurements& measurements,
               const std::vector<Candidate>& candidates) {
  int round = 0;
  for (;; ++round) {
    const auto batch = strategy.next_round(candidates);
    if (batch.empty()) break;
    bool stopped = false;
    for (std::size_t i : batch)
      if (!measurements.measure_one(i, round)) {
        stopped = true;
        break;
      }
    if (stopped) break;
  }
  return round;
}

// The entry's evidence: the chosen configuration against the defaults in enough paired rounds to
// mean something. A strategy that left the defaults behind early gets rounds of the two together,
// interleaved (as many as a configuration gets in exhaustive search), as far as budget and cap
// allow.
void add_evidence_rounds(SessionMeasurements& measurements, int round,
                         const StrategyOptions& options, TuneResult& res) {
  if (options.deterministic || res.chosen == SIZE_MAX || res.defaults == SIZE_MAX ||
      res.chosen == res.defaults || res.candidates[res.defaults].rejected)
    return;
  const auto paired = [&] {
    const Candidate& a = res.candidates[res.chosen];
    const Candidate& b = res.candidates[res.defaults];
    return static_cast<int>(
        k3stats::pair_by_round(a.rounds, a.values, b.rounds, b.values).a.size());
  };
  int extra = 0;
  while (paired() < options.processes && extra < options.processes) {
    ++round;
    ++extra;
    if (!measurements.measure_one(res.defaults, round) ||
        !measurements.measure_one(res.chosen, round))
      break;
    if (res.candidates[res.chosen].rejected || res.candidates[res.defaults].rejected) break;
  }
  if (extra > 0) res.summary += fmt::format("; {} evidence rounds against the defaults", extra);
}

// The chosen configuration's mean and interval, and its speed-up over the defaults.
void fill_evidence(bool exact, TuneResult& res) {
  if (res.chosen == SIZE_MAX) return;
  const Candidate& c = res.candidates[res.chosen];
  const auto ci = k3stats::t_interval(c.values);
  res.evidence.mean = ci.mean;
  res.evidence.ci_low = std::isfinite(ci.half_width) ? ci.low : ci.mean;
  res.evidence.ci_high = std::isfinite(ci.half_width) ? ci.high : ci.mean;
  res.evidence.processes = c.measurements();
  res.evidence.exact = exact;
  if (res.defaults != SIZE_MAX && !res.candidates[res.defaults].values.empty()) {
    res.evidence.default_mean = res.candidates[res.defaults].mean();
    speedup_interval(c, res.candidates[res.defaults], res.evidence);
  } else {
    res.evidence.default_mean = ci.mean;
  }
}

}  // namespace

TuneResult run_tuning(const TuneRequest& r, Objective& objective,
                      k3store::TuningSessionStore* store, const std::string& session_id) {
  TuneResult res;
  add_candidates(r, res);
  StrategyOptions options = r.options;
  options.deterministic = objective.deterministic();
  std::string note;
  const std::string strategy_name = strategy_to_run(r, res.candidates, options, note);
  SessionMeasurements measurements(r, objective, store, session_id, options, res);
  auto strategy = make_strategy(strategy_name, *r.space, options);
  const int round = run_rounds(*strategy, measurements, res.candidates);
  res.summary = (res.seed_note.empty() ? "" : res.seed_note + "; ") + note + strategy->summary();
  if (measurements.capped())
    res.summary +=
        fmt::format("; stopped at exhaustive search's {} measurements", measurements.cap());
  if (res.replay_exhausted) res.summary += "; replay stopped where the stored measurements ran out";
  res.chosen = strategy->choose(res.candidates);
  add_evidence_rounds(measurements, round, options, res);
  fill_evidence(options.deterministic, res);
  return res;
}

}  // namespace k3tuner
