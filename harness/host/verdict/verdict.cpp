#include "harness/host/verdict/verdict.h"

#include "harness/host/stats/round_pairs.h"

#include <algorithm>
#include <cmath>
#include <map>

#include <fmt/format.h>

#include "harness/host/store/build_pairing_record.h"
#include "harness/host/verdict/verdict_error.h"

namespace k3verdict {
namespace {

k3stats::CompareOptions options(const RegressionConfig& config, double threshold) {
  k3stats::CompareOptions o;
  o.alpha = config.alpha;
  o.power = config.power;
  o.min_effect = threshold;
  o.estimator = config.estimator;
  return o;
}

Outcome outcome_of(const k3stats::Comparison& c) {
  switch (c.verdict) {
    case k3stats::Comparison::Verdict::kBSlower:
      return Outcome::kRegression;
    case k3stats::Comparison::Verdict::kBFaster:
      return Outcome::kImprovement;
    default:
      return Outcome::kUnchanged;
  }
}

AccuracyVerdict accuracy_of(const CellFigures& a, const CellFigures& b,
                            const RegressionConfig& config) {
  AccuracyVerdict v;
  v.ratio_a = a.error_to_bound;
  v.ratio_b = b.error_to_bound;
  if (v.ratio_a && v.ratio_b) v.ratio_flagged = *v.ratio_b > *v.ratio_a + config.max_ratio_increase;
  v.checksum_a = a.output_checksum;
  v.checksum_b = b.output_checksum;
  // Outputs must match only for the same kernel layer: generic and RVV round differently.
  v.checksum_required = config.identical_outputs.count(b.op) > 0 && a.path == b.path &&
                        !v.checksum_a.empty() && !v.checksum_b.empty();
  v.checksum_flagged = v.checksum_required && v.checksum_a != v.checksum_b;
  return v;
}

CellVerdict cell_verdict(const CellFigures& a, const CellFigures& b) {
  CellVerdict v;
  v.config_key = b.config_key;
  v.label = b.label;
  v.op = b.op;
  v.model = b.model;
  v.shape = shape_text(b.shape);
  v.a = &a;
  v.b = &b;
  // The label without the build marker of an A/B run: both sides are one configuration.
  if (const auto at = v.label.rfind(" ["); at != std::string::npos && v.label.back() == ']')
    v.label.resize(at);
  return v;
}

void add_failures(const RunData& run, const std::string& build, const std::string& side,
                  Verdict& v) {
  for (const auto& c : run.cells) {
    if (c.build_hash != build || c.ok) continue;
    v.failed.push_back({c.label, c.op, c.reason, side});
  }
}

// What every verdict starts from: the runs compared, how the per-call figures read, the rules.
Verdict verdict_shell(const std::string& baseline_run, const std::string& candidate_run,
                      const PerCall& per_call, const RegressionConfig& config) {
  Verdict v;
  v.baseline_run = baseline_run;
  v.candidate_run = candidate_run;
  v.per_call = per_call;
  v.config = config;
  return v;
}

}  // namespace

double verdict_threshold(const std::string& op, const RegressionConfig& config,
                         const std::optional<k3store::NoiseFloorRecord>& floor) {
  double t = config.min_effect_for(op);
  if (config.use_noise_floor && floor) t = std::max(t, floor->noise_floor);
  return t;
}

Speedup welch_speedup(const std::vector<double>& a, const std::vector<double>& b) {
  const double ma = k3stats::mean(a), mb = k3stats::mean(b);
  const double va = std::pow(k3stats::sample_stddev(a), 2) / double(a.size());
  const double vb = std::pow(k3stats::sample_stddev(b), 2) / double(b.size());
  const double se = std::sqrt(va + vb);
  Speedup s;
  s.value = ma / mb;
  if (se == 0) return {s.value, s.value, s.value};
  const double df =
      (va + vb) * (va + vb) / (va * va / double(a.size() - 1) + vb * vb / double(b.size() - 1));
  const double t = k3stats::t_critical(0.95, df);
  const double r_low = (mb - ma - t * se) / ma, r_high = (mb - ma + t * se) / ma;
  s.low = 1 / (1 + r_high);
  s.high = 1 + r_low > 0 ? 1 / (1 + r_low) : INFINITY;
  return s;
}

Speedup paired_speedup(const k3stats::Comparison& c) {
  // The shift is ln(b/a); the speed-up is a/b, so the interval's ends swap.
  return {1 / (1 + c.rel_diff), std::exp(-c.log_shift_high), std::exp(-c.log_shift_low)};
}

bool CellVerdict::timing_regression() const {
  // A suspected slowdown that could not be re-measured still counts: losing a kept runner must
  // not make a regression pass.
  return timing.outcome == Outcome::kRegression && timing.confirmation != Confirmation::kRefuted;
}

bool CellVerdict::regression() const {
  return timing_regression() || accuracy_regression() || bytes_regression();
}

int Verdict::regressions() const {
  return static_cast<int>(std::count_if(cells.begin(), cells.end(),
                                        [](const CellVerdict& c) { return c.regression(); }));
}
int Verdict::bytes_regressions() const {
  return static_cast<int>(std::count_if(cells.begin(), cells.end(),
                                        [](const CellVerdict& c) { return c.bytes_regression(); }));
}
int Verdict::accuracy_regressions() const {
  return static_cast<int>(std::count_if(
      cells.begin(), cells.end(), [](const CellVerdict& c) { return c.accuracy_regression(); }));
}
int Verdict::improvements() const {
  return static_cast<int>(std::count_if(cells.begin(), cells.end(), [](const CellVerdict& c) {
    return c.timing.outcome == Outcome::kImprovement;
  }));
}
int Verdict::unchanged() const {
  return static_cast<int>(std::count_if(cells.begin(), cells.end(), [](const CellVerdict& c) {
    return c.timing.outcome == Outcome::kUnchanged;
  }));
}
int Verdict::suspected() const {
  return static_cast<int>(std::count_if(cells.begin(), cells.end(), [](const CellVerdict& c) {
    return c.timing.outcome == Outcome::kRegression &&
           c.timing.confirmation != Confirmation::kConfirmed &&
           c.timing.confirmation != Confirmation::kInterleaved;
  }));
}

namespace {

// A count's jitter: the half-width of its stored interval (k3bench::store_counts keeps figure +-
// jitter); 0 for counts stored before the jitter was measured.
double count_jitter(const CellFigures& c) {
  if (!c.ci_low_ns || !c.ci_high_ns) return 0;
  return std::max(0.0, (*c.ci_high_ns - *c.ci_low_ns) / 2);
}

}  // namespace

TimingVerdict exact_count_verdict(double base, double base_jitter, double cand,
                                  double cand_jitter) {
  TimingVerdict t;
  ExactCount e;
  e.delta = cand - base;
  e.tolerance = 2 * std::max(base_jitter, cand_jitter);
  t.exact = e;
  t.processes_a = t.processes_b = 1;
  t.cmp.mean_a = base;
  t.cmp.mean_b = cand;
  t.cmp.rel_diff = base != 0 ? e.delta / base : 0;
  t.cmp.significant = t.cmp.meaningful = std::abs(e.delta) > e.tolerance;
  t.cmp.mde = base != 0 ? e.tolerance / std::abs(base) : 0;
  t.threshold = t.cmp.mde;
  t.outcome = !t.cmp.significant ? Outcome::kUnchanged
              : e.delta > 0      ? Outcome::kRegression
                                 : Outcome::kImprovement;
  t.cmp.verdict = t.outcome == Outcome::kRegression ? k3stats::Comparison::Verdict::kBSlower
                  : t.outcome == Outcome::kImprovement
                      ? k3stats::Comparison::Verdict::kBFaster
                      : k3stats::Comparison::Verdict::kNoDifference;
  t.confirmation = Confirmation::kInterleaved;  // exact: nothing to confirm
  const double ratio = cand != 0 ? base / cand : 1;
  t.speedup = {ratio, ratio, ratio};
  return t;
}

Verdict compare_runs(const RunData& base, const RunData& cand, const RegressionConfig& config,
                     const std::optional<k3store::NoiseFloorRecord>& noise_floor) {
  Verdict v = verdict_shell(base.run_uuid, cand.run_uuid, cand.per_call, config);
  v.baseline_build = base.build_hash;
  v.candidate_build = cand.build_hash;
  const bool counts = base.per_call.instructions && cand.per_call.instructions;
  v.method = counts ? "exact-counts" : "welch-across-runs";
  if (!counts) v.noise_floor = noise_floor;
  std::map<std::string, const CellFigures*> in_base;
  for (const auto& c : base.cells)
    if (c.build_hash == base.build_hash) in_base[c.config_key] = &c;
  std::map<std::string, bool> matched;
  for (const auto& b : cand.cells) {
    if (b.build_hash != cand.build_hash) continue;
    const auto it = in_base.find(b.config_key);
    if (it == in_base.end()) {
      v.only_in_candidate.push_back(b.label);
      continue;
    }
    matched[b.config_key] = true;
    const CellFigures& a = *it->second;
    CellVerdict cv = cell_verdict(a, b);
    cv.timing.threshold = verdict_threshold(b.op, config, noise_floor);
    cv.timing.processes_a = static_cast<int>(a.process_means.size());
    cv.timing.processes_b = static_cast<int>(b.process_means.size());
    if (!a.ok || !b.ok) {
      cv.timing.not_compared = !b.ok ? "failed in the candidate" : "failed in the baseline";
    } else if (counts) {
      cv.timing = exact_count_verdict(*a.mean_ns, count_jitter(a), *b.mean_ns, count_jitter(b));
      if (a.streamed_bytes && b.streamed_bytes)
        cv.bytes = ExactBytes{*a.streamed_bytes, *b.streamed_bytes};
    } else if (a.process_means.size() < 2 || b.process_means.size() < 2) {
      cv.timing.not_compared = "fewer than 2 counted processes on a side";
    } else {
      cv.timing.cmp = k3stats::compare_processes(a.process_means, b.process_means,
                                                 options(config, cv.timing.threshold));
      cv.timing.outcome = outcome_of(cv.timing.cmp);
      cv.timing.speedup = welch_speedup(a.process_means, b.process_means);
    }
    if (a.ok && b.ok) cv.accuracy = accuracy_of(a, b, config);
    v.cells.push_back(std::move(cv));
  }
  for (const auto& [key, a] : in_base)
    if (!matched.count(key)) v.only_in_baseline.push_back(a->label);
  add_failures(cand, cand.build_hash, "candidate", v);
  return v;
}

namespace {

k3stats::Comparison paired_rounds_comparison(RoundMeans a, RoundMeans b,
                                             const RegressionConfig& config, double threshold,
                                             int first_stage, Speedup* speedup) {
  const auto [pa, pb] = k3stats::pair_by_round(a.rounds, a.means, b.rounds, b.means);
  if (pa.size() < 2) throw std::invalid_argument("fewer than 2 rounds measured both sides");
  const int m = first_stage >= 2 && first_stage < static_cast<int>(pa.size()) ? first_stage : 0;
  const auto c = k3stats::compare_paired_rounds(pa, pb, options(config, threshold), m);
  if (speedup != nullptr) *speedup = paired_speedup(c);
  return c;
}

}  // namespace

k3stats::Comparison paired_comparison(const CellFigures& a, const CellFigures& b,
                                      const RegressionConfig& config, double threshold,
                                      int first_stage, Speedup* speedup) {
  return paired_rounds_comparison({a.process_rounds, a.process_means},
                                  {b.process_rounds, b.process_means}, config, threshold,
                                  first_stage, speedup);
}

TimingVerdict paired_timing_verdict(const std::string& op, RoundMeans a, RoundMeans b,
                                    const RegressionConfig& config,
                                    const std::optional<k3store::NoiseFloorRecord>& noise_floor,
                                    int first_stage) {
  TimingVerdict t;
  t.threshold = verdict_threshold(op, config, noise_floor);
  t.confirmation = Confirmation::kInterleaved;
  t.processes_a = static_cast<int>(a.means.size());
  t.processes_b = static_cast<int>(b.means.size());
  try {
    t.cmp = paired_rounds_comparison(a, b, config, t.threshold, first_stage, &t.speedup);
    t.outcome = outcome_of(t.cmp);
  } catch (const std::invalid_argument& e) {
    t.not_compared = e.what();
  }
  return t;
}

namespace {

// One cell's paired verdict within a run: `a` and `b` measured in the same rounds.
CellVerdict paired_cell_verdict(const CellFigures& a, const CellFigures& b,
                                const RegressionConfig& config,
                                const std::optional<k3store::NoiseFloorRecord>& noise_floor,
                                int first_stage, const char* a_side, const char* b_side) {
  CellVerdict cv = cell_verdict(a, b);
  if (!a.ok || !b.ok) {
    cv.timing.threshold = verdict_threshold(b.op, config, noise_floor);
    cv.timing.confirmation = Confirmation::kInterleaved;
    cv.timing.processes_a = static_cast<int>(a.process_means.size());
    cv.timing.processes_b = static_cast<int>(b.process_means.size());
    cv.timing.not_compared = fmt::format("failed in the {}", !b.ok ? b_side : a_side);
  } else {
    cv.timing = paired_timing_verdict(b.op, {a.process_rounds, a.process_means},
                                      {b.process_rounds, b.process_means}, config, noise_floor,
                                      first_stage);
    cv.accuracy = accuracy_of(a, b, config);
  }
  return cv;
}

// Stein's first stage of a run that chose its process counts adaptively (0: fixed counts).
int first_stage_of(const RunData& run) {
  return run.settings.value("target_ci", 0.0) > 0 ? run.settings.value("min_processes", 0) : 0;
}

Verdict within_run_shell(const RunData& run, const RegressionConfig& config,
                         const std::optional<k3store::NoiseFloorRecord>& noise_floor) {
  Verdict v = verdict_shell(run.run_uuid, run.run_uuid, run.per_call, config);
  v.noise_floor = noise_floor;
  v.method = "paired-rounds-within-run";
  // A run of two builds says how it measured them (bench --build-pairing, build_pairing.h).
  if (const auto p = k3store::BuildPairing::from_settings(run.settings)) {
    if (p->within()) v.method = "paired-within-process";
    v.design = p->text();
  }
  return v;
}

}  // namespace

Verdict compare_within_run(const RunData& run, const RegressionConfig& config,
                           const std::optional<k3store::NoiseFloorRecord>& noise_floor) {
  const BuildInfo* base = nullptr;
  const BuildInfo* cand = nullptr;
  for (const auto& b : run.builds) {
    if (b.label == "baseline") base = &b;
    if (b.label == "candidate") cand = &b;
  }
  if (base == nullptr || cand == nullptr)
    throw VerdictError(fmt::format("run {} did not measure a baseline build", run.run_uuid));
  Verdict v = within_run_shell(run, config, noise_floor);
  v.baseline_build = base->build_hash;
  v.candidate_build = cand->build_hash;
  std::map<std::string, const CellFigures*> in_base;
  for (const auto& c : run.cells)
    if (c.build_hash == base->build_hash) in_base[c.config_key] = &c;
  for (const auto& b : run.cells) {
    if (b.build_hash != cand->build_hash) continue;
    const auto it = in_base.find(b.config_key);
    if (it == in_base.end()) continue;
    v.cells.push_back(paired_cell_verdict(*it->second, b, config, noise_floor, first_stage_of(run),
                                          "baseline", "candidate"));
  }
  add_failures(run, cand->build_hash, "candidate", v);
  add_failures(run, base->build_hash, "baseline", v);
  return v;
}

Verdict compare_table_within_run(const RunData& run, const RegressionConfig& config,
                                 const std::optional<k3store::NoiseFloorRecord>& noise_floor) {
  // A cell's configuration without its table: what pairs the table's cell with the defaults'.
  const auto without_table = [](const CellFigures& c) {
    nlohmann::json m = c.measure;
    m.erase("table");
    m.erase("table_sha256");
    return config_key(c.target, c.op, c.shape, c.params, m);
  };
  Verdict v = within_run_shell(run, config, noise_floor);
  v.baseline_build = v.candidate_build = run.build_hash;
  std::map<std::string, const CellFigures*> defaults;
  for (const auto& c : run.cells)
    if (c.build_hash == run.build_hash && !c.measure.contains("table_sha256"))
      defaults[without_table(c)] = &c;
  for (const auto& b : run.cells) {
    if (b.build_hash != run.build_hash || !b.measure.contains("table_sha256")) continue;
    const auto it = defaults.find(without_table(b));
    if (it == defaults.end()) continue;
    v.cells.push_back(paired_cell_verdict(*it->second, b, config, noise_floor, first_stage_of(run),
                                          "defaults", "table's cell"));
  }
  add_failures(run, run.build_hash, "candidate", v);
  if (v.cells.empty())
    throw VerdictError(fmt::format(
        "run {} measured no cell both with a tuning table and without one", run.run_uuid));
  return v;
}

const char* to_string(Outcome o) {
  switch (o) {
    case Outcome::kRegression:
      return "regression";
    case Outcome::kImprovement:
      return "improvement";
    case Outcome::kUnchanged:
      return "unchanged";
    default:
      return "not-compared";
  }
}

const char* to_string(Confirmation c) {
  switch (c) {
    case Confirmation::kConfirmed:
      return "confirmed";
    case Confirmation::kRefuted:
      return "refuted";
    case Confirmation::kUnavailable:
      return "unavailable";
    case Confirmation::kInterleaved:
      return "interleaved";
    default:
      return "not-asked";
  }
}

std::string timing_text(const TimingVerdict& t) {
  const double pct = 100 * t.cmp.rel_diff;
  if (t.exact && t.outcome != Outcome::kNotCompared) {
    if (t.outcome == Outcome::kUnchanged)
      return fmt::format("identical within +-{:.0f} insns", t.exact->tolerance);
    return fmt::format("{} {:+.0f} insns ({:+.2f}%)",
                       t.outcome == Outcome::kRegression ? "MORE" : "fewer", t.exact->delta, pct);
  }
  // Every tested verdict names its estimator and test: the same data can read differently under
  // the mean and the Hodges-Lehmann shift when a round is far off.
  const std::string by = t.cmp.estimator.empty() ? "" : " (" + t.cmp.estimator + ")";
  switch (t.outcome) {
    case Outcome::kRegression:
      return fmt::format("SLOWER {:+.1f}%{}", pct, by);
    case Outcome::kImprovement:
      return fmt::format("faster {:+.1f}%{}", pct, by);
    case Outcome::kUnchanged:
      return fmt::format("unchanged within +-{:.1f}%{}", 100 * std::max(t.cmp.mde, t.threshold),
                         by);
    default:
      return "not compared: " + t.not_compared;
  }
}

namespace {

nlohmann::json opt_json(const std::optional<double>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

nlohmann::json finite(double x) {
  return std::isfinite(x) ? nlohmann::json(x) : nlohmann::json(nullptr);
}

nlohmann::json comparison_json(const k3stats::Comparison& c) {
  return {{"baseline_mean_ns", c.mean_a},
          {"candidate_mean_ns", c.mean_b},
          {"rel_diff", finite(c.rel_diff)},
          {"t", finite(c.t)},
          {"df", finite(c.df)},
          {"p_value", finite(c.p_value)},
          {"significant", c.significant},
          {"meaningful", c.meaningful},
          {"minimum_detectable_effect", finite(c.mde)},
          {"method", c.method},
          {"estimator", c.estimator}};
}

}  // namespace

nlohmann::json to_json(const Verdict& v) {
  nlohmann::json cells = nlohmann::json::array();
  for (const auto& c : v.cells) {
    nlohmann::json timing = {
        {"outcome", to_string(c.timing.outcome)},
        {"speedup",
         {{"value", finite(c.timing.speedup.value)},
          {"ci95", {finite(c.timing.speedup.low), finite(c.timing.speedup.high)}}}},
        {"text", timing_text(c.timing)},
        {"exact", c.timing.exact
                      ? nlohmann::json{{"delta_instructions", c.timing.exact->delta},
                                       {"tolerance_instructions", c.timing.exact->tolerance}}
                      : nlohmann::json(nullptr)},
        {"threshold", c.timing.threshold},
        {"processes", {c.timing.processes_a, c.timing.processes_b}},
        {"confirmation", to_string(c.timing.confirmation)},
        {"confirm_note", c.timing.confirm_note},
        {"confirm_run", c.timing.confirm_run}};
    // An exact count verdict ran no test: its figures are in "exact" and the speed-up.
    if (c.timing.outcome != Outcome::kNotCompared && !c.timing.exact)
      timing["test"] = comparison_json(c.timing.cmp);
    if (c.timing.confirm_cmp) timing["confirm_test"] = comparison_json(*c.timing.confirm_cmp);
    cells.push_back(
        {{"config_key", c.config_key},
         {"label", c.label},
         {"op", c.op},
         {"model", c.model},
         {"shape", c.shape},
         {"regression", c.regression()},
         {"timing", timing},
         {"streamed_bytes", c.bytes ? nlohmann::json{{"baseline", c.bytes->base},
                                                     {"candidate", c.bytes->cand},
                                                     {"delta", c.bytes->delta()},
                                                     {"regression", c.bytes_regression()}}
                                    : nlohmann::json(nullptr)},
         {"accuracy",
          {{"error_to_bound", {opt_json(c.accuracy.ratio_a), opt_json(c.accuracy.ratio_b)}},
           {"ratio_flagged", c.accuracy.ratio_flagged},
           {"checksum", {c.accuracy.checksum_a, c.accuracy.checksum_b}},
           {"checksum_required", c.accuracy.checksum_required},
           {"checksum_flagged", c.accuracy.checksum_flagged}}}});
  }
  nlohmann::json failed = nlohmann::json::array();
  for (const auto& f : v.failed)
    failed.push_back({{"label", f.label}, {"op", f.op}, {"reason", f.reason}, {"side", f.side}});
  nlohmann::json floor = nullptr;
  if (v.noise_floor) {
    floor = {{"target", v.noise_floor->target},
             {"cpu_model", v.noise_floor->cpu_model},
             {"noise_floor", v.noise_floor->noise_floor},
             {"measured_at", v.noise_floor->measured_at}};
  }
  return {{"baseline_run", v.baseline_run},
          {"candidate_run", v.candidate_run},
          {"baseline_build", v.baseline_build},
          {"candidate_build", v.candidate_build},
          {"method", v.method},
          {"design", v.design},
          {"alpha", v.config.alpha},
          {"rules", v.config.source},
          {"confirm_requested", v.confirm_requested},
          {"noise_floor", floor},
          {"counts",
           {{"regressions", v.regressions()},
            {"accuracy_regressions", v.accuracy_regressions()},
            {"bytes_regressions", v.bytes_regressions()},
            {"improvements", v.improvements()},
            {"unchanged", v.unchanged()},
            {"suspected", v.suspected()},
            {"failed", v.failed.size()}}},
          {"cells", cells},
          {"failed", failed},
          {"only_in_baseline", v.only_in_baseline},
          {"only_in_candidate", v.only_in_candidate}};
}

}  // namespace k3verdict
