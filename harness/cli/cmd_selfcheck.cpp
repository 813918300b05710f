// `k3tune selfcheck stats`: measures -- with real runner processes -- how often the A/B test calls
// a difference between identical configurations (false-positive rate) and how often it detects a
// known slowdown (calibrated extra work of +x% of the measured median per call, via the runner's
// --extra-work-ns). Each trial runs A, A', A+x1, A+x2 ... as P interleaved process rounds.
#include <cmath>
#include <iostream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "app_context.h"
#include "catalog.h"
#include "progress.h"
#include "runner_process.h"
#include "stats.h"

namespace k3tune {
namespace {

struct Args {
  std::string target = "local";
  std::string op = "linear_decode", shape = "n=256,k=256", params = "workers=1,copies=1";
  int trials = 20;
  std::vector<double> slowdowns = {0.05, 0.10};
  MeasureSettings settings;
  k3stats::CompareOptions compare;
};

void run_selfcheck(const AppContext& ctx, Args& a) {
  auto target = ctx.target(a.target);
  const Catalog catalog = Catalog::from_target(*target);
  const OpSpec& op = catalog.op(a.op, "--op");
  const CellSpec cell{a.op, catalog.normalise(op, parse_kv(a.shape, "--shape"), true, "--shape"),
                      catalog.normalise(op, parse_kv(a.params, "--params"), false, "--params"), ""};
  const auto popt = k3targets::ProcessOptions::with_timeout(target->config().timeout_s);
  auto measure = [&](const MeasureSettings& s) {
    const auto o = run_cell_process(*target, cell, s, popt);
    if (!o.ok) throw UserError(fmt::format("selfcheck: runner failed: {}", o.reason));
    return o.mean_ns();
  };
  // Calibration: the per-call time the slowdowns are a fraction of.
  const double base_ns = measure(a.settings);
  std::vector<MeasureSettings> configs(2 + a.slowdowns.size(), a.settings);  // A, A', A+x...
  for (std::size_t k = 0; k < a.slowdowns.size(); ++k)
    configs[2 + k].extra_work_ns = a.slowdowns[k] * base_ns;

  const int P = a.settings.processes;
  int false_positives = 0, paired_false_positives = 0;
  std::vector<int> detected(a.slowdowns.size(), 0), paired_detected(a.slowdowns.size(), 0);
  std::vector<std::vector<double>> measured_slowdown(a.slowdowns.size());
  std::vector<double> aa_diffs;
  Progress progress(a.trials * P * static_cast<int>(configs.size()), !ctx.quiet);
  int done = 0;
  for (int trial = 0; trial < a.trials; ++trial) {
    std::vector<std::vector<double>> means(configs.size());
    for (int p = 0; p < P; ++p) {
      for (std::size_t c = 0; c < configs.size(); ++c) {
        progress.update(done++, fmt::format("trial {}/{} config {}", trial + 1, a.trials, c));
        means[c].push_back(measure(configs[c]));
      }
    }
    const auto aa = k3stats::compare_processes(means[0], means[1], a.compare);
    false_positives += aa.verdict != k3stats::Comparison::Verdict::kNoDifference;
    // The same data judged round by round (configurations are interleaved within each round).
    paired_false_positives += k3stats::compare_paired_rounds(means[0], means[1], a.compare).verdict !=
                              k3stats::Comparison::Verdict::kNoDifference;
    aa_diffs.push_back(std::fabs(aa.rel_diff));
    for (std::size_t k = 0; k < a.slowdowns.size(); ++k) {
      const auto ab = k3stats::compare_processes(means[0], means[2 + k], a.compare);
      detected[k] += ab.verdict == k3stats::Comparison::Verdict::kBSlower;
      paired_detected[k] += k3stats::compare_paired_rounds(means[0], means[2 + k], a.compare).verdict ==
                            k3stats::Comparison::Verdict::kBSlower;
      measured_slowdown[k].push_back(ab.rel_diff);
    }
  }
  progress.finish();
  nlohmann::json out = {{"target", target->name()},
                        {"op", a.op},
                        {"shape", cell.shape},
                        {"params", cell.params},
                        {"trials", a.trials},
                        {"processes", P},
                        {"repetitions", a.settings.repetitions},
                        {"min_time_s", a.settings.min_time_s},
                        {"base_ns_per_call", base_ns},
                        {"method", "Welch t-test on process means, two-sided"},
                        {"alpha", a.compare.alpha},
                        {"min_effect", a.compare.min_effect},
                        {"a_vs_a",
                         {{"false_positives", false_positives},
                          {"trials", a.trials},
                          {"rate", double(false_positives) / a.trials},
                          {"mean_abs_diff", k3stats::mean(aa_diffs)},
                          {"paired_false_positives", paired_false_positives}}}};
  for (std::size_t k = 0; k < a.slowdowns.size(); ++k) {
    out["slowdowns"].push_back({{"injected", a.slowdowns[k]},
                                {"extra_work_ns", configs[2 + k].extra_work_ns},
                                {"detected", detected[k]},
                                {"trials", a.trials},
                                {"rate", double(detected[k]) / a.trials},
                                {"paired_detected", paired_detected[k]},
                                {"measured_mean", k3stats::mean(measured_slowdown[k])},
                                {"measured_sd", k3stats::sample_stddev(measured_slowdown[k])}});
  }
  if (ctx.json) {
    std::cout << out.dump(2) << "\n";
    return;
  }
  fmt::print("selfcheck stats: {} {} {} on {}\n", a.op, to_kv(cell.shape), a.params,
             target->name());
  fmt::print(
      "  {} trials x {} configurations x {} processes x {} reps (min-time {} s); base {:.1f} ns "
      "per call\n",
      a.trials, configs.size(), P, a.settings.repetitions, a.settings.min_time_s, base_ns);
  fmt::print("  tests: Welch t on process means | paired t on per-round log ratios; alpha {}, "
             "minimum effect {:.0f}%\n",
             a.compare.alpha, a.compare.min_effect * 100);
  fmt::print("  A vs A           false positives {:>3}/{:<3} = {:5.1f}% | paired {:>3}/{:<3} = {:5.1f}%   "
             "(mean |diff| {:.2f}%)\n",
             false_positives, a.trials, 100.0 * false_positives / a.trials, paired_false_positives,
             a.trials, 100.0 * paired_false_positives / a.trials, 100 * k3stats::mean(aa_diffs));
  for (std::size_t k = 0; k < a.slowdowns.size(); ++k) {
    fmt::print(
        "  A vs A+{:<4.1f}%     detected        {:>3}/{:<3} = {:5.1f}% | paired {:>3}/{:<3} = {:5.1f}%   "
        "(measured slowdown {:+.2f}% sd {:.2f}%)\n",
        100 * a.slowdowns[k], detected[k], a.trials, 100.0 * detected[k] / a.trials,
        paired_detected[k], a.trials, 100.0 * paired_detected[k] / a.trials,
        100 * k3stats::mean(measured_slowdown[k]),
        100 * k3stats::sample_stddev(measured_slowdown[k]));
  }
}

}  // namespace

void add_selfcheck_command(CLI::App& app, AppContext& ctx) {
  auto* sc = app.add_subcommand("selfcheck", "check k3tune itself");
  sc->require_subcommand(1);
  auto a = std::make_shared<Args>();
  a->settings.min_time_s = 0.02;
  auto* stats =
      sc->add_subcommand("stats", "measured false-positive and detection rates of the A/B test");
  stats->add_option("--target", a->target, "target name")->capture_default_str();
  stats->add_option("--op", a->op, "op")->capture_default_str();
  stats->add_option("--shape", a->shape, "shape k=v,...")->capture_default_str();
  stats->add_option("--params", a->params, "parameters k=v,...")->capture_default_str();
  stats->add_option("--trials", a->trials, "independent trials")
      ->capture_default_str()
      ->check(CLI::Range(1, 10000));
  stats->add_option("--slowdown", a->slowdowns, "injected slowdowns as fractions (repeatable)")
      ->capture_default_str();
  stats->add_option("-P,--processes", a->settings.processes, "processes per configuration")
      ->capture_default_str()
      ->check(CLI::Range(2, 1000));
  stats->add_option("-R,--reps", a->settings.repetitions, "repetitions per process")
      ->capture_default_str();
  stats->add_option("--min-time", a->settings.min_time_s, "seconds per repetition")
      ->capture_default_str();
  stats->add_option("--min-effect", a->compare.min_effect, "minimum relative effect")
      ->capture_default_str();
  stats->add_option("--alpha", a->compare.alpha, "significance level")->capture_default_str();
  stats->callback([&ctx, a] { run_selfcheck(ctx, *a); });
}

}  // namespace k3tune
