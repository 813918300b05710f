#include "harness/host/bench/selfcheck.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <random>
#include <stdexcept>

#include <fmt/format.h>

#include "harness/host/bench/user_error.h"
#include "harness/host/stats/signed_rank.h"

namespace k3bench {
namespace {

using Clock = std::chrono::steady_clock;

// One trial of one cell: every configuration measured interleaved until the planner stops them
// (one paired group: they stop together, like the two sides of a real comparison, and process r
// of each ran in round r). Returns the planner, which holds the counted means and their rounds.
//
// The order within each round is shuffled (seeded by trial and round, so a run is reproducible).
// In a fixed order A, A', A+3%, A+5%, A+10% each slowdown sat at its own distance from A -- the
// +10% pair four processes away, A' next to A -- and on a machine whose drift decorrelates within
// a few processes the far pairs are much noisier than the A-vs-A' pair the noise floor and the
// minimum detectable effect are measured on: the MDE understated what the +10% verdict could see,
// and a larger slowdown could be detected less often than a smaller one (on a real VM, prefill:
// +10% in 3/20 trials, +3% in 5/20, at a reported MDE of 12%). Shuffled, every pair has the same
// distribution of distances, so the A-vs-A' figures describe every injected comparison.
RoundPlanner measure_trial(ProcessExecutor& executor, const SweepBuild& build,
                           const std::vector<CellSpec>& configs, const SelfcheckOptions& opt,
                           std::int64_t iterations, int trial, CellSelfcheck& stats) {
  RoundsOptions rounds = opt.rounds;
  rounds.paired = true;
  RoundPlanner planner(std::vector<std::size_t>(configs.size(), 0), rounds);
  std::mt19937_64 order_rng(0x5E1FC4EC0ull + static_cast<std::uint64_t>(trial));
  for (auto round = planner.next_round(); !round.empty(); round = planner.next_round()) {
    std::shuffle(round.begin(), round.end(), order_rng);
    for (std::size_t u : round) {
      if (planner.unit(u).done) continue;  // the group finished earlier in this round
      const ProcessOutcome o = executor.run(build, configs[u], planner.unit(u).processes, false,
                                            iterations, opt.timeout_s);
      ++stats.processes;
      if (!o.ok)
        throw UserError(
            fmt::format("selfcheck: {}: runner failed: {}", configs[u].label(), o.reason));
      planner.record_ok(u, o.mean_ns(), o.disturbed);
    }
  }
  for (std::size_t u = 0; u < configs.size(); ++u) {
    stats.mean_processes += planner.unit(u).processes;
    stats.processes_at_max += planner.unit(u).stop_reason.starts_with("max");
  }
  return planner;
}

// The A/B verdict of the protocol on interleaved data: the paired test on per-round log ratios.
// With a target CI the counts came from Stein's two-stage procedure: the test takes its spread
// from the first stage (exact false-positive rate).
k3stats::Comparison verdict(const RoundPlanner& p, std::size_t a, std::size_t b,
                            const k3stats::CompareOptions& opt) {
  const auto [x, y] = p.paired_means(a, b);
  if (x.size() < 2) return {};
  const int first_stage = p.options().target_ci > 0 ? p.options().min_processes : 0;
  return k3stats::compare_paired_rounds(x, y, opt, first_stage);
}

// Per configuration of the within-process design: each process's geometric means of its A and of
// its B repetitions (the paired test's two sides), and the trial's wall time spent on them.
struct WithinTrial {
  std::vector<std::vector<double>> a, b;
  double wall_s = 0;
};

// One trial of the within-process design: `processes` undisturbed processes of every
// configuration, interleaved in a shuffled order per round like the rounds design, and with
// within_mde more of a configuration until its sign-free MDE reaches the target (as table verify).
// A disturbed process is replaced (at most twice as many replacements as processes asked for), as
// the planner replaces one.
WithinTrial measure_within(ProcessExecutor& executor, const SweepBuild& build,
                           const std::vector<CellSpec>& configs, const SelfcheckOptions& opt,
                           std::int64_t iterations, int trial, WithinProcessSelfcheck& stats) {
  WithinTrial t;
  t.a.resize(configs.size());
  t.b.resize(configs.size());
  const auto start = Clock::now();
  std::mt19937_64 order_rng(0xAB0A11CEull + static_cast<std::uint64_t>(trial));
  std::vector<std::size_t> order(configs.size());
  for (std::size_t u = 0; u < order.size(); ++u) order[u] = u;
  const int most = opt.within_mde > 0 ? std::max(opt.within_processes, opt.within_max_processes)
                                      : opt.within_processes;
  // Done: the first look is in, and the count is fixed, or the sign-free MDE is within the target,
  // or the ceiling is reached. The rule sees magnitudes only, so the test stays exact.
  auto done = [&](std::size_t u) {
    const int n = static_cast<int>(t.a[u].size());
    if (n < opt.within_processes) return false;
    if (opt.within_mde <= 0 || n >= most) return true;
    std::vector<double> d;
    for (int i = 0; i < n; ++i) d.push_back(std::log(t.b[u][i] / t.a[u][i]));
    // MDE <= target, as one power evaluation instead of the MDE's root search.
    return k3stats::signed_rank_power_from_magnitudes(d, opt.within_mde, opt.compare.alpha) >=
           opt.compare.power;
  };
  int replacements = 0;
  for (int round = 0;; ++round) {
    std::vector<std::size_t> due;
    for (std::size_t u : order)
      if (!done(u)) due.push_back(u);
    if (due.empty()) break;
    std::shuffle(due.begin(), due.end(), order_rng);
    for (std::size_t u : due) {
      for (;;) {
        const ProcessOutcome o =
            executor.run(build, configs[u], round, false, iterations, opt.timeout_s);
        ++stats.processes;
        if (!o.ok)
          throw UserError(fmt::format("selfcheck: {} (within one process): runner failed: {}",
                                      configs[u].label(), o.reason));
        double a = 0, b = 0;
        if (!o.side_means(a, b))
          throw UserError(fmt::format(
              "selfcheck: {}: the runner reported no sides for the within-process design (a "
              "k3bench without --extra-work-sides or --build-b?)",
              configs[u].label()));
        if (o.disturbed && replacements < 2 * opt.within_processes) {
          ++replacements;
          continue;
        }
        t.a[u].push_back(a);
        t.b[u].push_back(b);
        break;
      }
    }
  }
  for (const auto& a : t.a) stats.mean_processes_per_verdict += double(a.size());  // a sum here
  t.wall_s = std::chrono::duration<double>(Clock::now() - start).count();
  return t;
}

// One design's verdicts on one cell over its trials: A vs A (a false positive when it calls a
// change) and A vs each injected slowdown (a detection when it calls B slower).
struct Tally {
  int false_positives = 0;
  std::vector<int> detected;                  // per slowdown
  std::vector<double> mdes;                   // the A-vs-A comparison's, per trial
  std::vector<std::vector<double>> measured;  // relative B - A, per slowdown and trial
  explicit Tally(std::size_t slowdowns) : detected(slowdowns, 0), measured(slowdowns) {}

  // aa: the trial's A-vs-A verdict; ab[k]: A vs slowdown k. aa's difference goes to aa_differences.
  void add(const k3stats::Comparison& aa, const std::vector<k3stats::Comparison>& ab,
           std::vector<double>& aa_differences) {
    false_positives += aa.verdict != k3stats::Comparison::Verdict::kNoDifference;
    aa_differences.push_back(aa.rel_diff);
    mdes.push_back(aa.mde);
    for (std::size_t k = 0; k < ab.size(); ++k) {
      detected[k] += ab[k].verdict == k3stats::Comparison::Verdict::kBSlower;
      measured[k].push_back(ab[k].rel_diff);
    }
  }
  // Rates over `trials` (the detections' injected sizes are already set) and the median MDE.
  void finish(int trials, k3stats::Proportion& fp, std::vector<Detection>& detections,
              double& mde) const {
    fp = k3stats::clopper_pearson(false_positives, trials);
    for (std::size_t k = 0; k < detections.size(); ++k) {
      detections[k].rate = k3stats::clopper_pearson(detected[k], trials);
      detections[k].measured_mean = k3stats::mean(measured[k]);
    }
    mde = k3stats::median(mdes);
  }
};

// Cells' tallies pooled: counts summed, measured means weighted by each cell's trials.
struct PooledTally {
  int false_positives = 0, trials = 0;
  std::vector<int> detected;
  std::vector<double> measured_sum;
  explicit PooledTally(std::size_t slowdowns) : detected(slowdowns, 0), measured_sum(slowdowns) {}
  void add(const Tally& t, const std::vector<Detection>& cell, int cell_trials) {
    false_positives += t.false_positives;
    trials += cell_trials;
    for (std::size_t k = 0; k < detected.size(); ++k) {
      detected[k] += t.detected[k];
      measured_sum[k] += cell[k].measured_mean * cell_trials;
    }
  }
  void finish(const std::vector<double>& slowdowns, k3stats::Proportion& fp,
              std::vector<Detection>& detections) const {
    fp = k3stats::clopper_pearson(false_positives, trials);
    detections.clear();
    for (std::size_t k = 0; k < slowdowns.size(); ++k) {
      Detection d;
      d.injected = slowdowns[k];
      d.rate = k3stats::clopper_pearson(detected[k], trials);
      d.measured_mean = trials > 0 ? measured_sum[k] / trials : 0;
      detections.push_back(d);
    }
  }
};

double quantile_abs(std::vector<double> x, double q) {
  for (auto& v : x) v = std::fabs(v);
  return k3stats::quantile(std::move(x), q);
}

// A within-process design over the cells (A and B in every process): per cell its configurations
// (A vs A first, then one per slowdown; none: not measured on that cell), its verdicts and the
// wall time its trials took. Two of them: the injected extra work (two parameter sets of one
// build) and the build pair (two builds, k3bench --build-b).
struct WithinDesign {
  std::vector<std::vector<CellSpec>> configs;
  std::vector<Tally> tally;
  std::vector<double> wall;
  std::vector<double> slowdowns;
  WithinDesign(std::size_t cells, std::vector<double> injected)
      : configs(cells),
        tally(cells, Tally(injected.size())),
        wall(cells, 0),
        slowdowns(std::move(injected)) {}

  void run_trial(ProcessExecutor& executor, const SweepBuild& build, const SelfcheckOptions& opt,
                 std::size_t c, std::int64_t iterations, int trial, WithinProcessSelfcheck& w) {
    if (configs[c].empty()) return;
    const WithinTrial t = measure_within(executor, build, configs[c], opt, iterations, trial, w);
    wall[c] += t.wall_s;
    std::vector<k3stats::Comparison> ab;
    for (std::size_t k = 1; k < configs[c].size(); ++k)
      ab.push_back(k3stats::compare_paired_rounds(t.a[k], t.b[k], opt.compare));
    tally[c].add(k3stats::compare_paired_rounds(t.a[0], t.b[0], opt.compare), ab, w.aa_differences);
  }
};

// The budget fields every within design reports.
void set_within_budget(const SelfcheckOptions& opt, int repetitions, WithinProcessSelfcheck& w) {
  w.processes_per_verdict = opt.within_processes;
  w.mde_target = opt.within_mde;
  w.max_processes = opt.within_mde > 0 ? opt.within_max_processes : 0;
  w.repetitions_per_side = repetitions;
}

// A design's figures over the cells: each cell's finished, then pooled (counts summed; the noise
// floor, MDE and wall time per verdict the largest of the cells'). Returns the processes spent.
int finish_within(const WithinDesign& d, double target_mde, std::vector<CellSelfcheck>& cells,
                  WithinProcessSelfcheck CellSelfcheck::*member, WithinProcessSelfcheck& pooled) {
  if (std::all_of(d.configs.begin(), d.configs.end(), [](const auto& v) { return v.empty(); }))
    return 0;  // not measured: the pooled figures stay empty
  PooledTally tally(d.slowdowns.size());
  double verdicts_sum = 0, counted_sum = 0;
  int processes = 0;
  for (std::size_t c = 0; c < cells.size(); ++c) {
    if (d.configs[c].empty()) continue;
    const int trials = cells[c].trials;
    WithinProcessSelfcheck& w = cells[c].*member;
    d.tally[c].finish(trials, w.false_positives, w.detections, w.minimum_detectable_effect);
    tally.add(d.tally[c], w.detections, trials);
    w.noise_floor = k3stats::sample_stddev(w.aa_differences);
    const double verdicts = double(trials) * double(d.configs[c].size());
    verdicts_sum += verdicts;
    counted_sum += w.mean_processes_per_verdict;
    if (trials > 0) {
      w.verdict_wall_s = d.wall[c] / verdicts;
      w.mean_processes_per_verdict /= verdicts;
      if (w.minimum_detectable_effect > 0 && target_mde > 0) {
        const double scale = std::pow(w.minimum_detectable_effect / target_mde, 2);
        w.processes_for_target_mde = w.mean_processes_per_verdict * scale;
        w.verdict_wall_s_for_target_mde = w.verdict_wall_s * scale;
      }
    }
    pooled.noise_floor = std::max(pooled.noise_floor, w.noise_floor);
    pooled.minimum_detectable_effect =
        std::max(pooled.minimum_detectable_effect, w.minimum_detectable_effect);
    pooled.verdict_wall_s = std::max(pooled.verdict_wall_s, w.verdict_wall_s);
    pooled.processes_for_target_mde =
        std::max(pooled.processes_for_target_mde, w.processes_for_target_mde);
    pooled.verdict_wall_s_for_target_mde =
        std::max(pooled.verdict_wall_s_for_target_mde, w.verdict_wall_s_for_target_mde);
    pooled.processes += w.processes;
    pooled.processes_per_verdict = w.processes_per_verdict;
    pooled.mde_target = w.mde_target;
    pooled.max_processes = w.max_processes;
    pooled.repetitions_per_side = w.repetitions_per_side;
    processes += w.processes;
  }
  if (verdicts_sum > 0) pooled.mean_processes_per_verdict = counted_sum / verdicts_sum;
  tally.finish(d.slowdowns, pooled.false_positives, pooled.detections);
  return processes;
}

// The build pair's configurations on one cell: A vs the runner's own plugin (the same source
// built twice, in two link namespaces), then A vs the planted build. The planted build says how
// much it plants (build.planted_slowdown_percent), asked by one accuracy-checked process.
std::vector<CellSpec> build_pair_configs(ProcessExecutor& executor, const SweepBuild& build,
                                         const SelfcheckOptions& opt, const CellSpec& cell,
                                         std::int64_t iterations, double& planted) {
  CellSpec same = cell;
  same.settings.build_b = opt.build_pair_plugin;
  same.settings.repetitions = 2 * cell.settings.repetitions;
  CellSpec slow = same;
  slow.settings.build_b = opt.build_pair_planted;
  const ProcessOutcome probe = executor.run(build, slow, 0, true, iterations, opt.timeout_s);
  if (!probe.ok)
    throw UserError(fmt::format("selfcheck: {} --build-b {}: runner failed: {}", cell.label(),
                                opt.build_pair_planted, probe.reason));
  planted =
      probe.runner.is_object()
          ? probe.runner.value("/build_b/build/build/planted_slowdown_percent"_json_pointer, 0.0) /
                100
          : 0.0;
  if (!(planted > 0))
    throw UserError(fmt::format(
        "selfcheck: --build-pair: {}: plants no slowdown (its build.planted_slowdown_percent; "
        "build libk3bench_plugin_planted.so)",
        opt.build_pair_planted));
  return {same, slow};
}

// Every design's state over the cells: their configurations, set up by calibration, and their
// tallies, which the trials add to and the figures are finished from.
struct Designs {
  std::vector<std::vector<CellSpec>> configs;  // the rounds design's: A, A', then each slowdown
  std::vector<Tally> tally;                    // the rounds design's
  // The within-process designs: injected extra work (A vs A, then each slowdown on side B) and,
  // when asked for, the build pair.
  WithinDesign within;
  WithinDesign builds;
  explicit Designs(const SelfcheckOptions& opt)
      : configs(opt.cells.size()),
        tally(opt.cells.size(), Tally(opt.slowdowns.size())),
        within(opt.cells.size(), opt.within_processes > 0 ? opt.slowdowns : std::vector<double>{}),
        builds(opt.cells.size(), {}) {}
};

// The injected-work within design's configurations on one cell: both sides in one process, A vs
// A first, then each slowdown on side B.
void set_up_within(const SelfcheckOptions& opt, CellSelfcheck& cs, std::vector<CellSpec>& configs) {
  // Both sides in one process: twice the repetitions, half of them each side's.
  CellSpec both = cs.cell;
  both.settings.alternate_extra_work = true;
  both.settings.repetitions = 2 * cs.cell.settings.repetitions;
  configs = {both};
  for (const auto& d : cs.detections) {
    CellSpec slow = both;
    slow.settings.extra_work_ns = d.extra_work_ns;
    configs.push_back(slow);
    cs.within.detections.push_back({d.injected, d.extra_work_ns, {}, 0});
  }
  set_within_budget(opt, cs.cell.settings.repetitions, cs.within);
}

// The build pair's configurations on cell c (its planted size asked by one process).
void set_up_build_pair(ProcessExecutor& executor, const SweepBuild& build,
                       const SelfcheckOptions& opt, std::size_t c, CellSelfcheck& cs,
                       WithinDesign& builds) {
  double planted = 0;
  std::vector<CellSpec> pair =
      build_pair_configs(executor, build, opt, cs.cell, cs.iterations, planted);
  ++cs.builds.processes;
  // One plugin, one planted size: the design takes it from the first cell.
  if (c == 0) builds = WithinDesign(opt.cells.size(), {planted});
  builds.configs[c] = std::move(pair);
  cs.builds.detections.push_back({planted, 0, {}, 0});
  set_within_budget(opt, cs.cell.settings.repetitions, cs.builds);
}

// Calibration of cell c: one process gives the per-call time the slowdowns are fractions of, and
// the calls per repetition every trial then uses; every design's configurations follow from them.
CellSelfcheck calibrate_cell(ProcessExecutor& executor, const SweepBuild& build,
                             const SelfcheckOptions& opt, std::size_t c, Designs& d) {
  CellSelfcheck cs;
  cs.cell = opt.cells[c];
  const ProcessOutcome base = executor.run(build, cs.cell, 0, true, 0, opt.timeout_s);
  if (!base.ok)
    throw UserError(fmt::format("selfcheck: {}: runner failed: {}", cs.cell.label(), base.reason));
  cs.base_ns = base.mean_ns();
  cs.cpu_model = base.runner.is_object() ? base.runner.value("/environment/cpu_model"_json_pointer,
                                                             std::string("unknown"))
                                         : "unknown";
  cs.iterations = base.iterations;
  cs.processes = 1;
  cs.rounds_measured = opt.injected_designs;
  if (opt.injected_designs) d.configs[c] = {cs.cell, cs.cell};
  for (double s : opt.slowdowns) {
    CellSpec slow = cs.cell;
    slow.settings.extra_work_ns = s * cs.base_ns;
    if (opt.injected_designs) d.configs[c].push_back(slow);
    cs.detections.push_back({s, slow.settings.extra_work_ns, {}, 0});
  }
  if (opt.within_processes > 0 && opt.injected_designs) set_up_within(opt, cs, d.within.configs[c]);
  if (opt.within_processes > 0 && !opt.build_pair_plugin.empty())
    set_up_build_pair(executor, build, opt, c, cs, d.builds);
  return cs;
}

// One trial of cell c in every design it measures.
void run_trial(ProcessExecutor& executor, const SweepBuild& build, const SelfcheckOptions& opt,
               int trial, std::size_t c, Designs& d, CellSelfcheck& cs) {
  if (opt.injected_designs) {
    const auto trial_start = Clock::now();
    const RoundPlanner trial_data =
        measure_trial(executor, build, d.configs[c], opt, cs.iterations, trial, cs);
    cs.process_wall_s += std::chrono::duration<double>(Clock::now() - trial_start).count();
    std::vector<k3stats::Comparison> ab;
    for (std::size_t k = 0; k < opt.slowdowns.size(); ++k)
      ab.push_back(verdict(trial_data, 0, 2 + k, opt.compare));
    d.tally[c].add(verdict(trial_data, 0, 1, opt.compare), ab, cs.aa_differences);
  }
  d.within.run_trial(executor, build, opt, c, cs.iterations, trial, cs.within);
  d.builds.run_trial(executor, build, opt, c, cs.iterations, trial, cs.builds);
  ++cs.trials;
}

// The rounds design's figures: each cell's, with what its target MDE would cost, then pooled
// (the noise floor and MDE the largest of the cells'). Adds every cell's processes to the result.
void finish_rounds_design(const SelfcheckOptions& opt, const Designs& d, SelfcheckResult& result) {
  PooledTally pooled(opt.slowdowns.size());
  for (std::size_t c = 0; c < result.cells.size(); ++c) {
    CellSelfcheck& cs = result.cells[c];
    result.processes += cs.processes;
    if (!opt.injected_designs) continue;  // its figures stay empty, as "not measured"
    d.tally[c].finish(cs.trials, cs.false_positives, cs.detections, cs.minimum_detectable_effect);
    pooled.add(d.tally[c], cs.detections, cs.trials);
    cs.noise_floor = k3stats::sample_stddev(cs.aa_differences);
    cs.abs_diff_q95 = quantile_abs(cs.aa_differences, 0.95);
    if (cs.trials > 0) {
      const double trial_processes = cs.mean_processes;  // summed by measure_trial so far
      cs.mean_processes /= double(cs.trials) * double(d.configs[c].size());
      cs.process_wall_s /= trial_processes;
      cs.verdict_wall_s = 2 * cs.mean_processes * cs.process_wall_s;
      if (cs.minimum_detectable_effect > 0 && opt.target_mde > 0) {
        const double scale = cs.minimum_detectable_effect / opt.target_mde;
        cs.processes_for_target_mde = cs.mean_processes * scale * scale;
        cs.verdict_wall_s_for_target_mde = 2 * cs.processes_for_target_mde * cs.process_wall_s;
        result.wall_s_for_target_mde += double(opt.trials) / double(opt.cells.size()) *
                                        double(d.configs[c].size()) * cs.processes_for_target_mde *
                                        cs.process_wall_s;
      }
    }
    result.noise_floor = std::max(result.noise_floor, cs.noise_floor);
    result.minimum_detectable_effect =
        std::max(result.minimum_detectable_effect, cs.minimum_detectable_effect);
  }
  if (opt.injected_designs) pooled.finish(opt.slowdowns, result.false_positives, result.detections);
}

}  // namespace

SelfcheckResult run_selfcheck(ProcessExecutor& executor, const SweepBuild& build,
                              const SelfcheckOptions& opt,
                              const std::function<void(int, int, const std::string&)>& progress) {
  if (opt.cells.empty()) throw std::invalid_argument("run_selfcheck: no cells");
  if (!opt.injected_designs && (opt.within_processes <= 0 || opt.build_pair_plugin.empty()))
    throw std::invalid_argument(
        "run_selfcheck: no design to measure (the build pair alone needs it)");
  const auto start = Clock::now();
  SelfcheckResult result;
  Designs designs(opt);
  for (std::size_t c = 0; c < opt.cells.size(); ++c)
    result.cells.push_back(calibrate_cell(executor, build, opt, c, designs));

  for (int trial = 0; trial < opt.trials; ++trial) {
    const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
    if (opt.time_budget_s > 0 && trial > 0 && elapsed > opt.time_budget_s) {
      result.cut_by_time_budget = true;
      break;
    }
    // Trials take turns over the cells: `trials` A-vs-A trials in all, split across the cells.
    const std::size_t c = static_cast<std::size_t>(trial) % opt.cells.size();
    if (progress) progress(trial, opt.trials, opt.cells[c].label());
    run_trial(executor, build, opt, trial, c, designs, result.cells[c]);
    result.trials = trial + 1;
  }

  finish_rounds_design(opt, designs, result);
  result.processes += finish_within(designs.within, opt.target_mde, result.cells,
                                    &CellSelfcheck::within, result.within);
  result.processes += finish_within(designs.builds, opt.target_mde, result.cells,
                                    &CellSelfcheck::builds, result.builds);
  result.wall_s = std::chrono::duration<double>(Clock::now() - start).count();
  return result;
}

}  // namespace k3bench
