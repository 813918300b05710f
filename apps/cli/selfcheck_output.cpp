// What `k3tune selfcheck stats` reports: the JSON contract scripts read and the printed blocks
// (each design's budget, cells, rates with their intervals and prices).
#include "apps/cli/selfcheck_output.h"

#include <fmt/format.h>

namespace k3cli {
namespace {

nlohmann::json proportion_json(const k3stats::Proportion& p) {
  return {{"rate", p.rate},
          {"ci95_low", p.low},
          {"ci95_high", p.high},
          {"count", p.successes},
          {"trials", p.trials}};
}

std::string percent_key(double x) {
  return fmt::format("{:g}%", x * 100);
}

// The A/B test the selfcheck judged with, as the verdicts name it.
std::string method_text(k3stats::PairedEstimator e) {
  return e == k3stats::PairedEstimator::kHodgesLehmann
             ? "Hodges-Lehmann shift of per-round log ratios, Wilcoxon signed-rank, two-sided"
             : "paired t on per-round log ratios, first-stage spread (Stein two-stage), two-sided";
}

// Detection rates by injected slowdown ("5%": the rate with its interval, the mean measured size
// and, per cell, the extra work that made it).
nlohmann::json detections_json(const std::vector<k3bench::Detection>& detections,
                               bool with_extra_work) {
  nlohmann::json det = nlohmann::json::object();
  for (const auto& d : detections) {
    nlohmann::json& one = det[percent_key(d.injected)] = proportion_json(d.rate);
    one["measured_mean"] = d.measured_mean;
    if (with_extra_work) one["extra_work_ns"] = d.extra_work_ns;
  }
  return det;
}

// The within-process design's figures (a cell's or the pooled ones).
nlohmann::json within_json(const k3bench::WithinProcessSelfcheck& w) {
  return {{"false_positive_rate", proportion_json(w.false_positives)},
          {"detection_rate", detections_json(w.detections, false)},
          {"noise_floor", w.noise_floor},
          {"minimum_detectable_effect", w.minimum_detectable_effect},
          {"processes_per_verdict", w.processes_per_verdict},
          {"mde_target", w.mde_target},
          {"max_processes", w.max_processes},
          {"mean_processes_per_verdict", w.mean_processes_per_verdict},
          {"repetitions_per_side", w.repetitions_per_side},
          {"processes", w.processes},
          {"verdict_wall_s", w.verdict_wall_s},
          {"for_target_mde",
           {{"processes_per_configuration", w.processes_for_target_mde},
            {"verdict_wall_s", w.verdict_wall_s_for_target_mde}}}};
}

void print_proportion(const std::string& what, const k3stats::Proportion& p) {
  fmt::print("  {:<24} {:>4}/{:<4} = {:5.1f}%  (95% CI {:.1f}%..{:.1f}%)\n", what, p.successes,
             p.trials, 100 * p.rate, 100 * p.low, 100 * p.high);
}

// A within-process design's block: its budget, each cell beside the rounds design's figures, and
// its rates.
void print_within(const k3bench::SelfcheckResult& r, const k3bench::WithinProcessSelfcheck& w,
                  k3bench::WithinProcessSelfcheck k3bench::CellSelfcheck::*member,
                  const std::string& title, double target_mde) {
  const std::string budget =
      w.mde_target > 0
          ? fmt::format(
                "{} processes, then more until the sign-free MDE is {:.1f}% (at most {}): "
                "{:.1f} per verdict on average",
                w.processes_per_verdict, 100 * w.mde_target, w.max_processes,
                w.mean_processes_per_verdict)
          : fmt::format("{} processes per verdict", w.processes_per_verdict);
  fmt::print("{}; {} + {} repetitions per process; {}:\n", title, w.repetitions_per_side,
             w.repetitions_per_side, budget);
  for (const auto& c : r.cells) {
    const k3bench::WithinProcessSelfcheck& cw = c.*member;
    if (c.rounds_measured)
      fmt::print(
          "  {} {}: noise floor {:.2f}%, MDE {:.2f}%, {:.1f} s per verdict (between processes: "
          "MDE {:.2f}%, {:.1f} s)\n",
          c.cell.label(), k3bench::to_kv(c.cell.params), 100 * cw.noise_floor,
          100 * cw.minimum_detectable_effect, cw.verdict_wall_s, 100 * c.minimum_detectable_effect,
          c.verdict_wall_s);
    else
      fmt::print("  {} {}: noise floor {:.2f}%, MDE {:.2f}%, {:.1f} s per verdict\n",
                 c.cell.label(), k3bench::to_kv(c.cell.params), 100 * cw.noise_floor,
                 100 * cw.minimum_detectable_effect, cw.verdict_wall_s);
    if (cw.processes_for_target_mde > 0)
      fmt::print(
          "    an MDE of {:g}% here needs about {:.0f} processes per configuration: about {:.0f} s "
          "per verdict\n",
          100 * target_mde, cw.processes_for_target_mde, cw.verdict_wall_s_for_target_mde);
  }
  print_proportion("A vs A false positives", w.false_positives);
  for (const auto& d : w.detections)
    print_proportion(fmt::format("A vs A+{:g}% detected", d.injected * 100), d.rate);
}

// The rounds design's block: its budget, each cell's figures and price, its rates.
void print_rounds(const k3bench::SelfcheckResult& r, const k3bench::RoundsOptions& rounds,
                  const SelfcheckReport& a) {
  fmt::print(
      "  budget per configuration: {}..{} processes (two-stage), target CI {:.1f}%, {} x {} s "
      "repetitions; {}, alpha {}, minimum effect {:.0f}%\n",
      rounds.min_processes, rounds.max_processes, rounds.target_ci * 100, a.repetitions,
      a.min_time_s, method_text(a.compare.estimator), a.compare.alpha, a.compare.min_effect * 100);
  for (const auto& c : r.cells) {
    fmt::print(
        "  {} {}: {:.1f} us per call, noise floor {:.2f}% (|diff| q95 {:.2f}%), MDE {:.2f}%, "
        "{:.1f} processes "
        "per configuration ({} at the maximum)\n",
        c.cell.label(), k3bench::to_kv(c.cell.params), c.base_ns / 1e3, 100 * c.noise_floor,
        100 * c.abs_diff_q95, 100 * c.minimum_detectable_effect, c.mean_processes,
        c.processes_at_max);
    if (c.processes_for_target_mde > 0 && !a.synthetic)  // a synthetic process costs nothing
      fmt::print(
          "    an MDE of {:.0f}% here needs about {:.0f} processes per configuration: {:.0f} s "
          "per A/B verdict at the measured {:.2f} s per process\n",
          100 * a.target_mde, c.processes_for_target_mde, c.verdict_wall_s_for_target_mde,
          c.process_wall_s);
  }
  print_proportion("A vs A false positives", r.false_positives);
  for (const auto& d : r.detections) {
    print_proportion(fmt::format("A vs A+{:g}% detected", d.injected * 100), d.rate);
  }
  fmt::print(
      "  noise floor {:.2f}%, minimum detectable effect {:.2f}% (the largest over the cells)\n",
      100 * r.noise_floor, 100 * r.minimum_detectable_effect);
  for (const auto& d : r.detections) {
    if (std::fabs(d.injected - 0.05) < 1e-9 && d.rate.rate < 0.8) {
      fmt::print(
          "  NOT MET: a 5% slowdown is detected in {:.0f}% of trials (target 80%): at this budget "
          "the minimum "
          "detectable effect is {:.1f}%; more processes (--max-processes, --mde) or a quieter "
          "machine are needed: at the processes an MDE of {:.0f}% needs, this selfcheck would "
          "take about {:.0f} min\n",
          100 * d.rate.rate, 100 * r.minimum_detectable_effect, 100 * a.target_mde,
          r.wall_s_for_target_mde / 60);
    }
  }
  if (r.false_positives.rate > 0.05) {
    fmt::print("  NOT MET: false-positive rate {:.1f}% is above 5%\n",
               100 * r.false_positives.rate);
  }
}

}  // namespace

nlohmann::json selfcheck_json(const k3bench::SelfcheckResult& r,
                              const k3bench::RoundsOptions& rounds, const SelfcheckReport& a,
                              const std::string& target) {
  nlohmann::json detection = nlohmann::json::object();
  for (const auto& d : r.detections) detection[percent_key(d.injected)] = proportion_json(d.rate);
  nlohmann::json cells = nlohmann::json::array();
  for (const auto& c : r.cells) {
    cells.push_back({{"op", c.cell.op},
                     {"shape", c.cell.shape},
                     {"params", c.cell.params},
                     {"base_ns_per_call", c.base_ns},
                     {"iterations", c.iterations},
                     {"trials", c.trials},
                     {"false_positive_rate", proportion_json(c.false_positives)},
                     {"detection_rate", detections_json(c.detections, true)},
                     {"noise_floor", c.noise_floor},
                     {"abs_diff_q95", c.abs_diff_q95},
                     {"minimum_detectable_effect", c.minimum_detectable_effect},
                     {"mean_processes_per_configuration", c.mean_processes},
                     {"configurations_at_max_processes", c.processes_at_max},
                     {"processes", c.processes},
                     {"process_wall_s", c.process_wall_s},
                     {"verdict_wall_s", c.verdict_wall_s},
                     {"for_target_mde",
                      {{"mde", a.target_mde},
                       {"processes_per_configuration", c.processes_for_target_mde},
                       {"verdict_wall_s", c.verdict_wall_s_for_target_mde}}}});
    if (a.within_processes > 0 && !a.only_build_pair)
      cells.back()["within_process"] = within_json(c.within);
    if (!a.build_pair.empty()) cells.back()["build_pair"] = within_json(c.builds);
  }
  const double fp_high = r.false_positives.rate;
  double det5 = -1;
  for (const auto& d : r.detections)
    if (std::fabs(d.injected - 0.05) < 1e-9) det5 = d.rate.rate;
  nlohmann::json targets = {{"false_positive_rate_at_most_5pct", fp_high <= 0.05},
                            {"detects_5pct_in_at_least_80pct", det5 >= 0.8}};
  nlohmann::json out = {{"target", target},
                        {"runner", a.synthetic ? "synthetic" : "k3bench"},
                        {"trials", r.trials},
                        {"cut_by_time_budget", r.cut_by_time_budget},
                        {"false_positive_rate", proportion_json(r.false_positives)},
                        {"detection_rate", detection},
                        {"noise_floor", r.noise_floor},
                        {"minimum_detectable_effect", r.minimum_detectable_effect},
                        {"measurements", {{"processes", r.processes}, {"wall_s", r.wall_s}}},
                        {"wall_s_for_target_mde", r.wall_s_for_target_mde},
                        {"budget",
                         {{"min_processes", rounds.min_processes},
                          {"target_mde", rounds.target_mde},
                          {"max_processes", rounds.max_processes},
                          {"target_ci", rounds.target_ci},
                          {"repetitions", a.repetitions},
                          {"min_time_s", a.min_time_s}}},
                        {"test",
                         {{"method", method_text(a.compare.estimator)},
                          {"estimator", k3stats::to_string(a.compare.estimator)},
                          {"alpha", a.compare.alpha},
                          {"min_effect", a.compare.min_effect},
                          {"power_for_mde", a.compare.power}}},
                        {"targets_met", targets},
                        {"cells", cells}};
  // Absent with --within-processes 0, as "not measured".
  out["target_mde"] = a.target_mde;
  out["rounds_design_measured"] = !a.only_build_pair;
  if (a.within_processes > 0 && !a.only_build_pair) out["within_process"] = within_json(r.within);
  if (!a.build_pair.empty()) out["build_pair"] = within_json(r.builds);
  return out;
}

void print_selfcheck(const k3bench::SelfcheckResult& r, const k3bench::RoundsOptions& rounds,
                     const SelfcheckReport& a, const std::string& target) {
  fmt::print("selfcheck stats on {} ({}): {} trials{}, {} runner processes, {:.0f} s\n", target,
             a.synthetic ? "synthetic runner" : "k3bench", r.trials,
             r.cut_by_time_budget ? " (cut by the time budget)" : "", r.processes, r.wall_s);
  if (!a.only_build_pair) print_rounds(r, rounds, a);
  if (a.within_processes > 0 && !a.only_build_pair)
    print_within(r, r.within, &k3bench::CellSelfcheck::within,
                 "within one process (A and B alternate repetitions A B, B A, ...; two parameter "
                 "sets of one build)",
                 a.target_mde);
  if (!a.build_pair.empty())
    print_within(r, r.builds, &k3bench::CellSelfcheck::builds,
                 "two builds within one process (k3bench --build-b: A against the same source "
                 "built twice, and against the planted build)",
                 a.target_mde);
}

}  // namespace k3cli
