#include "reports/confirm.h"

#include <cmath>

#include <fmt/format.h>

#include "harness/host/bench/sweep.h"
#include "harness/host/store/database.h"
#include "reports/runner_store.h"

namespace k3reports {
namespace {

// The cell as the sweep measures it, from what the database recorded.
k3bench::CellSpec cell_spec(const k3verdict::CellFigures& c) {
  k3bench::CellSpec s;
  s.op = c.op;
  s.shape = c.shape;
  s.params = c.params;
  const auto& m = c.measure;
  auto& t = s.settings;
  t.repetitions = m.value("repetitions", t.repetitions);
  t.warmup = m.value("warmup", t.warmup);
  t.min_time_s = m.value("min_time_s", t.min_time_s);
  t.iterations = m.value("iterations", t.iterations);
  t.check = m.value("check", t.check);
  t.path = m.value("path", t.path);
  t.extra_work_ns = m.value("extra_work_ns", t.extra_work_ns);
  t.cpus = m.value("cpus", t.cpus);
  t.pool_wait = m.value("pool_wait", t.pool_wait);
  t.huge_pages = m.value("huge_pages", t.huge_pages);
  t.weight_load = m.value("weight_load", t.weight_load);
  return s;
}

void mark_unavailable(const std::vector<k3verdict::CellVerdict*>& cells, const std::string& why) {
  for (auto* c : cells) {
    c->timing.confirmation = k3verdict::Confirmation::kUnavailable;
    c->timing.confirm_note = why;
  }
}

}  // namespace

std::string confirm_suspected(k3verdict::Verdict& v, const k3verdict::RunData& base, const k3verdict::RunData& cand,
                              const ConfirmContext& ctx) {
  v.confirm_requested = true;
  std::vector<k3verdict::CellVerdict*> suspected;
  for (auto& c : v.cells)
    if (c.timing.outcome == k3verdict::Outcome::kRegression &&
        c.timing.confirmation == k3verdict::Confirmation::kNotAsked)
      suspected.push_back(&c);
  if (suspected.empty()) return "";
  if (base.build_hash == cand.build_hash) {
    // The code is the same: whatever moved between the runs is the machine (the trends show it).
    for (auto* c : suspected) {
      c->timing.confirmation = k3verdict::Confirmation::kRefuted;
      c->timing.confirm_note =
          fmt::format("both runs measured build {}: the code did not change, the machine did",
                      base.build_hash.substr(0, 12));
    }
    return "";
  }
  const auto target = ctx.targets.find(cand.target);
  if (target == ctx.targets.end()) {
    mark_unavailable(suspected, fmt::format("target {} is not in the targets file", cand.target));
    return "";
  }
  const k3verdict::BuildInfo* build_a = base.build(base.build_hash);
  const k3verdict::BuildInfo* build_b = cand.build(cand.build_hash);
  const auto runner_a =
      find_runner(ctx.runners_dir, base.build_hash, build_a ? build_a->binary_path : "");
  const auto runner_b =
      find_runner(ctx.runners_dir, cand.build_hash, build_b ? build_b->binary_path : "");
  if (runner_a.path.empty() || runner_b.path.empty()) {
    mark_unavailable(
        suspected, "cannot re-measure: " + (runner_a.path.empty() ? runner_a.note : runner_b.note));
    return "";
  }
  k3targets::TargetConfig config_a = target->second, config_b = target->second;
  config_a.runner = runner_a.path;
  config_b.runner = runner_b.path;
  const auto target_a = k3targets::make_target(config_a, ctx.root);
  const auto target_b = k3targets::make_target(config_b, ctx.root);
  const std::vector<k3bench::SweepBuild> builds = {{target_a.get(), base.build_hash, "baseline"},
                                                   {target_b.get(), cand.build_hash, "candidate"}};
  std::vector<k3bench::CellSpec> cells;
  for (const auto* c : suspected) cells.push_back(cell_spec(*c->b));

  k3bench::SweepOptions opt;
  opt.rounds.min_processes = v.config.confirm_processes;
  opt.rounds.max_processes = v.config.confirm_max_processes;
  opt.rounds.target_ci = v.config.confirm_target_ci;
  opt.rounds.paired = true;
  opt.progress = ctx.progress;
  opt.command_line =
      ctx.command_line.empty()
          ? fmt::format("k3tune report --confirm: {} against {}", cand.run_uuid, base.run_uuid)
          : ctx.command_line;
  auto db = k3store::open_for_writing(ctx.db_path);
  const k3bench::SweepReport report = k3bench::run_sweep(*db, builds, cells, opt);
  const int first_stage = opt.rounds.target_ci > 0 ? opt.rounds.min_processes : 0;
  for (std::size_t i = 0; i < suspected.size(); ++i) {
    k3verdict::CellVerdict& c = *suspected[i];
    const auto& a = report.cells[2 * i];
    const auto& b = report.cells[2 * i + 1];
    c.timing.confirm_run = report.run_uuid;
    if (!a.aggregate.ok || !b.aggregate.ok) {
      c.timing.confirmation = k3verdict::Confirmation::kUnavailable;
      c.timing.confirm_note =
          "re-measurement failed: " + (!b.aggregate.ok ? b.aggregate.reason : a.aggregate.reason);
      continue;
    }
    const auto [pa, pb] = k3bench::paired_means(a, b);
    if (pa.size() < 2) {
      c.timing.confirmation = k3verdict::Confirmation::kUnavailable;
      c.timing.confirm_note = "re-measurement has fewer than 2 paired rounds";
      continue;
    }
    k3stats::CompareOptions o;
    o.alpha = v.config.alpha;
    o.power = v.config.power;
    o.min_effect = c.timing.threshold;
    o.estimator = v.config.estimator;
    const int m = first_stage >= 2 && first_stage < static_cast<int>(pa.size()) ? first_stage : 0;
    const auto cmp = k3stats::compare_paired_rounds(pa, pb, o, m);
    c.timing.confirm_cmp = cmp;
    c.timing.speedup = k3verdict::paired_speedup(cmp);
    const bool slower = cmp.verdict == k3stats::Comparison::Verdict::kBSlower;
    c.timing.confirmation = slower ? k3verdict::Confirmation::kConfirmed : k3verdict::Confirmation::kRefuted;
    c.timing.confirm_note =
        slower ? fmt::format("interleaved: SLOWER {:+.1f}% (p {:.2g}, {} rounds, {})",
                             100 * cmp.rel_diff, cmp.p_value, pa.size(), cmp.estimator)
               : fmt::format(
                     "interleaved: unchanged within +-{:.1f}% ({:+.1f}%, p {:.2g}, {} rounds, {})",
                     100 * std::max(cmp.mde, c.timing.threshold), 100 * cmp.rel_diff, cmp.p_value,
                     pa.size(), cmp.estimator);
    // Not slower is a refutation only when the re-measurement could have seen the slowdown the
    // runs suggested; too noisy to tell, the suspicion stands and counts.
    if (!slower && cmp.mde > std::fabs(c.timing.cmp.rel_diff)) {
      c.timing.confirmation = k3verdict::Confirmation::kUnavailable;
      c.timing.confirm_note += fmt::format(": too noisy to rule out the suspected {:+.1f}%",
                                           100 * c.timing.cmp.rel_diff);
    }
  }
  return report.run_uuid;
}

}  // namespace k3reports
