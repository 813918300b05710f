#include "harness/host/bench/selfcheck.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <random>
#include <stdexcept>

#include <fmt/format.h>

#include "harness/host/bench/user_error.h"

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

double quantile_abs(std::vector<double> x, double q) {
  for (auto& v : x) v = std::fabs(v);
  return k3stats::quantile(std::move(x), q);
}

}  // namespace

SelfcheckResult run_selfcheck(ProcessExecutor& executor, const SweepBuild& build,
                              const SelfcheckOptions& opt,
                              const std::function<void(int, int, const std::string&)>& progress) {
  if (opt.cells.empty()) throw std::invalid_argument("run_selfcheck: no cells");
  const auto start = Clock::now();
  SelfcheckResult result;
  // Calibration: one process per cell gives the per-call time the slowdowns are fractions of, and
  // the calls per repetition every trial then uses.
  std::vector<std::vector<CellSpec>> configs(opt.cells.size());
  std::vector<int> fp(opt.cells.size(), 0);
  std::vector<std::vector<int>> detected(opt.cells.size(),
                                         std::vector<int>(opt.slowdowns.size(), 0));
  std::vector<std::vector<double>> mdes(opt.cells.size());
  std::vector<std::vector<std::vector<double>>> measured(
      opt.cells.size(), std::vector<std::vector<double>>(opt.slowdowns.size()));
  for (std::size_t c = 0; c < opt.cells.size(); ++c) {
    CellSelfcheck cs;
    cs.cell = opt.cells[c];
    const ProcessOutcome base = executor.run(build, cs.cell, 0, true, 0, opt.timeout_s);
    if (!base.ok)
      throw UserError(
          fmt::format("selfcheck: {}: runner failed: {}", cs.cell.label(), base.reason));
    cs.base_ns = base.mean_ns();
    cs.cpu_model =
        base.runner.is_object()
            ? base.runner.value("/environment/cpu_model"_json_pointer, std::string("unknown"))
            : "unknown";
    cs.iterations = base.iterations;
    cs.processes = 1;
    configs[c] = {cs.cell, cs.cell};
    for (double s : opt.slowdowns) {
      CellSpec slow = cs.cell;
      slow.settings.extra_work_ns = s * cs.base_ns;
      configs[c].push_back(slow);
      cs.detections.push_back({s, slow.settings.extra_work_ns, {}, 0});
    }
    result.cells.push_back(std::move(cs));
  }

  for (int trial = 0; trial < opt.trials; ++trial) {
    const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
    if (opt.time_budget_s > 0 && trial > 0 && elapsed > opt.time_budget_s) {
      result.cut_by_time_budget = true;
      break;
    }
    // Trials take turns over the cells: `trials` A-vs-A trials in all, split across the cells.
    {
      const std::size_t c = static_cast<std::size_t>(trial) % opt.cells.size();
      if (progress) progress(trial, opt.trials, opt.cells[c].label());
      CellSelfcheck& cs = result.cells[c];
      const auto trial_start = Clock::now();
      const RoundPlanner trial_data =
          measure_trial(executor, build, configs[c], opt, cs.iterations, trial, cs);
      cs.process_wall_s += std::chrono::duration<double>(Clock::now() - trial_start).count();
      const auto aa = verdict(trial_data, 0, 1, opt.compare);
      fp[c] += aa.verdict != k3stats::Comparison::Verdict::kNoDifference;
      cs.aa_differences.push_back(aa.rel_diff);
      mdes[c].push_back(aa.mde);
      for (std::size_t k = 0; k < opt.slowdowns.size(); ++k) {
        const auto ab = verdict(trial_data, 0, 2 + k, opt.compare);
        detected[c][k] += ab.verdict == k3stats::Comparison::Verdict::kBSlower;
        measured[c][k].push_back(ab.rel_diff);
      }
      ++cs.trials;
    }
    result.trials = trial + 1;
  }

  int fp_all = 0, trials_all = 0;
  std::vector<int> det_all(opt.slowdowns.size(), 0);
  for (std::size_t c = 0; c < result.cells.size(); ++c) {
    CellSelfcheck& cs = result.cells[c];
    cs.false_positives = k3stats::clopper_pearson(fp[c], cs.trials);
    for (std::size_t k = 0; k < opt.slowdowns.size(); ++k) {
      cs.detections[k].rate = k3stats::clopper_pearson(detected[c][k], cs.trials);
      cs.detections[k].measured_mean = k3stats::mean(measured[c][k]);
      det_all[k] += detected[c][k];
    }
    cs.noise_floor = k3stats::sample_stddev(cs.aa_differences);
    cs.abs_diff_q95 = quantile_abs(cs.aa_differences, 0.95);
    cs.minimum_detectable_effect = k3stats::median(mdes[c]);
    if (cs.trials > 0) {
      const double trial_processes = cs.mean_processes;  // summed by measure_trial so far
      cs.mean_processes /= double(cs.trials) * double(configs[c].size());
      cs.process_wall_s /= trial_processes;
      if (cs.minimum_detectable_effect > 0 && opt.target_mde > 0) {
        const double scale = cs.minimum_detectable_effect / opt.target_mde;
        cs.processes_for_target_mde = cs.mean_processes * scale * scale;
        cs.verdict_wall_s_for_target_mde = 2 * cs.processes_for_target_mde * cs.process_wall_s;
        result.wall_s_for_target_mde += double(opt.trials) / double(opt.cells.size()) *
                                        double(configs[c].size()) * cs.processes_for_target_mde *
                                        cs.process_wall_s;
      }
    }
    fp_all += fp[c];
    trials_all += cs.trials;
    result.noise_floor = std::max(result.noise_floor, cs.noise_floor);
    result.minimum_detectable_effect =
        std::max(result.minimum_detectable_effect, cs.minimum_detectable_effect);
    result.processes += cs.processes;
  }
  result.false_positives = k3stats::clopper_pearson(fp_all, trials_all);
  for (std::size_t k = 0; k < opt.slowdowns.size(); ++k) {
    Detection d;
    d.injected = opt.slowdowns[k];
    d.rate = k3stats::clopper_pearson(det_all[k], trials_all);
    double sum = 0;
    for (const auto& cs : result.cells) sum += cs.detections[k].measured_mean * cs.trials;
    d.measured_mean = trials_all > 0 ? sum / trials_all : 0;
    result.detections.push_back(d);
  }
  result.wall_s = std::chrono::duration<double>(Clock::now() - start).count();
  return result;
}

}  // namespace k3bench
