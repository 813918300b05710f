#include "apps/bisect/bisection.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "apps/bisect/commit_runners.h"
#include "apps/nightly/revision_ancestry.h"
#include "harness/host/bench/bench_session.h"
#include "harness/host/bench/catalog.h"
#include "harness/host/bench/grid.h"
#include "harness/host/bench/sweep.h"
#include "harness/host/bench/user_error.h"
#include "harness/host/store/bisections.h"
#include "harness/host/store/database.h"
#include "harness/host/store/results.h"
#include "harness/host/verdict/verdict.h"
#include "reports/report.h"

namespace k3bisect {
namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// A probe that cannot be measured: its runner failed (crashed, timed out, refused the case).
struct ProbeFailed : std::runtime_error {
  using std::runtime_error::runtime_error;
};

k3bench::GridRequest grid_of(const BisectCase& c) {
  k3bench::GridRequest g;
  g.ops = {c.op};
  g.shapes = {c.shape};
  g.params = c.params;
  return g;
}

CaseEffect from_timing(const std::string& label, const k3verdict::TimingVerdict& t) {
  CaseEffect e;
  e.label = label;
  e.outcome = t.outcome;
  e.effect = t.cmp.rel_diff;
  // The interval of the speedup (baseline / candidate) as one of the relative change.
  e.ci_low = std::isfinite(t.speedup.high) ? 1 / t.speedup.high - 1 : -1;
  e.ci_high = t.speedup.low > 0 ? 1 / t.speedup.low - 1 : INFINITY;
  e.mde = t.cmp.mde;
  e.rounds = std::min(t.processes_a, t.processes_b);
  e.verdict = k3verdict::timing_text(t);
  return e;
}

class Bisector {
 public:
  Bisector(const k3targets::Target* place, const BisectRequest& rq, const BisectRange& range)
      : place_(place),
        rq_(rq),
        range_(range),
        runners_({rq.root, rq.cache_dir, rq.variant, rq.db_path, rq.runners_dir, rq.jobs,
                  rq.progress}) {}

  BisectResult run(const std::function<void(const Probe&)>& on_probe);

 private:
  void check_cases_at_good();
  Probe probe(std::size_t index, int seq);
  CaseEffect measure_time(const BisectCase& c, const std::string& runner, const CaseEffect* chased);
  CaseEffect measure_count(const BisectCase& c, const std::string& runner);
  bool is_bad(const Probe& p) const;
  void store(const Probe& p);

  const k3targets::Target* place_;  // null: instruction counts (counted here)
  const BisectRequest& rq_;
  const BisectRange& range_;
  CommitRunners runners_;
  std::string good_hash_;
  BisectResult result_;
  std::map<std::string, k3bench::CountResult> good_counts_;  // label -> the good runner's count
};

void Bisector::check_cases_at_good() {
  // The catalog of the good revision's runner, where it runs: a case unknown there cannot be
  // bisected (UserError before anything is measured or stored).
  std::unique_ptr<k3targets::Target> at_good;
  if (rq_.instructions) {
    k3targets::TargetConfig q;
    q.name = fmt::format("qemu-vlen{}", rq_.vlen);
    q.kind = k3targets::TargetKind::kQemu;
    q.variant = rq_.variant;
    q.runner = result_.good_runner;
    q.vlen = rq_.vlen;
    q.qemu = rq_.tools.qemu;
    at_good = k3targets::make_target(q, rq_.root);
  } else {
    at_good = place_->with_runner(result_.good_runner);
  }
  const auto catalog = k3bench::Catalog::from_target(*at_good);
  for (const auto& c : rq_.cases) {
    try {
      k3bench::MeasureSettings settings;
      k3bench::ProcessPlan plan;
      k3bench::expand_grid(grid_of(c), catalog, rq_.root + "/configs/models", settings, plan);
    } catch (const k3bench::UserError& e) {
      throw k3bench::UserError(fmt::format("--case '{}': unknown at the good revision {}: {}",
                                           c.label(), range_.good.substr(0, 12), e.what()));
    }
  }
}

CaseEffect Bisector::measure_time(const BisectCase& c, const std::string& runner,
                                  const CaseEffect* chased) {
  const auto target = place_->with_runner(runner);
  CaseEffect e;
  for (int attempt = 1; attempt <= rq_.attempts; ++attempt) {
    k3bench::BenchRequest b;
    b.grid = grid_of(c);
    for (const auto& [key, value] : rq_.settings) {
      b.settings.set(key, value, "--" + key);
      b.settings_given.push_back(key);
    }
    b.plan.processes = b.plan.max_processes = rq_.processes << (attempt - 1);
    b.plan.target_ci = 0;
    b.remeasure_disturbed = rq_.remeasure_disturbed;
    b.baseline_runner = result_.good_runner;
    b.db_path = rq_.db_path;
    b.progress = false;
    b.command_line = rq_.command_line;
    const auto out = k3bench::run_bench(*target, rq_.root, b);
    for (const auto& cell : out.report.cells)
      if (!cell.aggregate.ok || !cell.skipped.empty())
        throw ProbeFailed(fmt::format("the runner failed: {}",
                                      cell.skipped.empty() ? cell.aggregate.reason : cell.skipped));
    const auto judged =
        k3reports::judge_within_run(rq_.db_path, out.report.run_uuid, rq_.rules_file);
    if (judged->verdict.cells.empty()) throw ProbeFailed("the A/B run compared no cell");
    e = from_timing(c.label(), judged->verdict.cells.front().timing);
    e.run_uuid = out.report.run_uuid;
    e.attempts = attempt;
    // Too few undisturbed rounds on both sides (a loaded machine): more rounds, or give up on
    // the commit as on one whose runner fails.
    if (e.outcome == k3verdict::Outcome::kNotCompared) {
      if (attempt == rq_.attempts) throw ProbeFailed("could not be compared: " + e.verdict);
      continue;
    }
    // Decisive: the run can tell the chased effect from no change (its MDE is below it); for
    // the bad revision (nothing chased yet), a regression, or an MDE below the op's threshold.
    const double enough = chased ? chased->effect : judged->verdict.cells.front().timing.threshold;
    if (e.outcome == k3verdict::Outcome::kRegression && !chased) break;
    if (e.mde <= enough) break;
  }
  return e;
}

CaseEffect Bisector::measure_count(const BisectCase& c, const std::string& runner) {
  k3bench::CountCase cc{runner, rq_.count_path, c.op, c.shape, rq_.vlen, nullptr};
  k3bench::CountResult r;
  try {
    r = k3bench::count_instructions(rq_.tools, cc);
  } catch (const k3bench::UserError& e) {
    throw ProbeFailed(fmt::format("the runner failed: {}", e.what()));
  }
  auto db = k3store::open_for_writing(rq_.db_path);
  const std::string run = k3bench::store_counts(*db, rq_.command_line, {r});
  CaseEffect e;
  e.label = c.label();
  e.instructions = r.instructions;
  e.run_uuid = run;
  const auto good = good_counts_.find(e.label);
  if (good == good_counts_.end()) {  // the good runner itself
    good_counts_[e.label] = r;
    e.outcome = k3verdict::Outcome::kUnchanged;
    return e;
  }
  const auto& g = good->second;
  const auto t = k3verdict::exact_count_verdict(g.instructions, g.jitter, r.instructions, r.jitter);
  e.outcome = t.outcome;
  e.delta = t.exact->delta;
  e.tolerance = t.exact->tolerance;
  e.effect = e.delta / g.instructions;
  e.ci_low = (e.delta - e.tolerance) / g.instructions;
  e.ci_high = (e.delta + e.tolerance) / g.instructions;
  e.verdict = fmt::format("{:+.0f} instructions per call ({})", e.delta, k3verdict::timing_text(t));
  return e;
}

Probe Bisector::probe(std::size_t index, int seq) {
  Probe p;
  p.seq = seq;
  p.index = index;
  p.commit = range_.commits[index];
  p.title = commit_title(rq_.root, p.commit);
  const CommitRunner cr = runners_.runner_of(p.commit);
  p.build_s = cr.build_s;
  p.hash = cr.hash;
  if (cr.runner.empty()) {
    p.reason = cr.failure;
    return p;
  }
  // The same binary as the good or the bad revision's (a commit that changed no code the runner
  // is built from): its outcome is theirs, without measuring.
  const bool as_good = cr.hash == good_hash_;
  const Probe* bad = result_.probes.empty() ? nullptr : &result_.probes.front();
  if (as_good || (bad != nullptr && cr.hash == bad->hash)) {
    p.outcome = as_good ? ProbeOutcome::kGood : ProbeOutcome::kBad;
    for (const auto& e : as_good ? result_.chased : bad->cases) {
      CaseEffect same = as_good ? CaseEffect{} : e;
      same.label = e.label;
      if (as_good) same.outcome = k3verdict::Outcome::kUnchanged;
      same.verdict = fmt::format("the {} revision's runner (sha256 {}): not measured again",
                                 as_good ? "good" : "bad", cr.hash.substr(0, 12));
      p.cases.push_back(same);
    }
    return p;
  }
  const auto start = Clock::now();
  try {
    for (const auto& c : rq_.cases) {
      const CaseEffect* chased = nullptr;
      for (const auto& ch : result_.chased)
        if (ch.label == c.label()) chased = &ch;
      if (seq > 0 && chased == nullptr) continue;  // a case the bad revision did not regress
      p.cases.push_back(rq_.instructions ? measure_count(c, cr.runner)
                                         : measure_time(c, cr.runner, chased));
    }
  } catch (const ProbeFailed& e) {
    p.reason = e.what();
    p.cases.clear();
  } catch (const k3targets::TargetLost&) {
    throw;
  } catch (const std::exception& e) {  // the runner could not even list its ops, ...
    p.reason = fmt::format("the runner failed: {}", e.what());
    p.cases.clear();
  }
  p.measure_s = since(start);
  if (p.reason.empty()) p.outcome = is_bad(p) ? ProbeOutcome::kBad : ProbeOutcome::kGood;
  return p;
}

bool Bisector::is_bad(const Probe& p) const {
  for (const auto& e : p.cases) {
    for (const auto& ch : result_.chased)
      if (ch.label == e.label && e.outcome == k3verdict::Outcome::kRegression &&
          e.effect >= ch.effect / 2)
        return true;
  }
  return false;
}

void Bisector::store(const Probe& p) {
  auto db = k3store::open_for_writing(rq_.db_path);
  k3store::Transaction tx(*db);
  auto row = [&](const CaseEffect* e) {
    k3store::BisectionProbeRecord r;
    r.bisection_id = result_.id;
    r.seq = p.seq;
    r.case_label = e ? e->label : "";
    r.revision = p.commit;
    r.position = static_cast<int>(p.index) + 1;
    r.outcome = to_string(p.outcome);
    r.reason = p.reason;
    r.build_hash = p.hash;
    if (e) {
      r.run_uuid = e->run_uuid;
      r.effect = e->effect;
      r.ci_low = e->ci_low;
      r.ci_high = e->ci_high;
      if (!rq_.instructions) {
        r.mde = e->mde;
        r.rounds = e->rounds;
        r.attempts = e->attempts;
      }
      r.verdict = e->verdict;
    }
    k3store::insert_bisection_probe(*db, r);
  };
  if (p.cases.empty()) row(nullptr);
  for (const auto& e : p.cases) row(&e);
  tx.commit();
}

BisectResult Bisector::run(const std::function<void(const Probe&)>& on_probe) {
  const auto start = Clock::now();
  result_.range = range_;
  result_.instructions = rq_.instructions;
  const CommitRunner good = runners_.runner_of(range_.good);
  if (good.runner.empty())
    throw k3bench::UserError(
        fmt::format("--good {}: no runner: {}", range_.good.substr(0, 12), good.failure));
  result_.good_runner = good.runner;
  good_hash_ = good.hash;
  check_cases_at_good();
  if (rq_.instructions) {
    for (const auto& c : rq_.cases) {
      try {
        measure_count(c, good.runner);
      } catch (const ProbeFailed& e) {
        throw k3bench::UserError(fmt::format("--good {}: {}", range_.good.substr(0, 12), e.what()));
      }
    }
  }
  result_.id = k3bench::new_uuid();
  nlohmann::json cases = nlohmann::json::array();
  for (const auto& c : rq_.cases) cases.push_back(c.label());
  {
    auto db = k3store::open_for_writing(rq_.db_path);
    k3store::begin_bisection(
        *db, {result_.id, range_.good, range_.bad, rq_.instructions ? "instructions" : "time",
              rq_.variant, rq_.instructions ? fmt::format("qemu-vlen{}", rq_.vlen) : place_->name(),
              cases.dump(), static_cast<int>(range_.commits.size()), rq_.nightly_id});
  }
  auto finish = [&](const std::string& status, const std::string& why) {
    result_.status = status;
    result_.why = why;
    result_.wall_s = since(start);
    auto db = k3store::open_for_writing(rq_.db_path);
    k3store::finish_bisection(
        *db, result_.id, status, status == "found" ? result_.candidates.front() : "",
        status == "range" ? result_.candidates : std::vector<std::string>{}, result_.wall_s);
    return result_;
  };
  // The bad revision first: the regression to chase, measured in this bisection's own conditions.
  BisectSearch search(range_.commits);
  const std::size_t bad_index = range_.commits.size() - 1;
  Probe bad = probe(bad_index, 0);
  for (const auto& e : bad.cases)
    if (e.outcome == k3verdict::Outcome::kRegression) result_.chased.push_back(e);
  bad.outcome = bad.reason.empty()
                    ? (result_.chased.empty() ? ProbeOutcome::kGood : ProbeOutcome::kBad)
                    : ProbeOutcome::kSkip;
  store(bad);
  result_.probes.push_back(bad);
  if (on_probe) on_probe(bad);
  if (!bad.reason.empty())
    return finish("failed", "the bad revision cannot be measured: " + bad.reason);
  if (result_.chased.empty())
    return finish("not-reproduced",
                  fmt::format("no case is slower{} at the bad revision than at the good one",
                              rq_.instructions ? " (more instructions)" : ""));
  int seq = 1;
  while (const auto next = search.next()) {
    Probe p = probe(*next, seq++);
    search.record(*next, p.outcome);
    store(p);
    result_.probes.push_back(p);
    if (on_probe) on_probe(p);
  }
  result_.candidates = search.candidates();
  return finish(search.found() ? "found" : "range", "");
}

}  // namespace

std::string BisectCase::label() const {
  return params.empty() ? fmt::format("{} {}", op, shape)
                        : fmt::format("{} {} {}", op, shape, params);
}

BisectCase parse_case(const std::string& text) {
  std::vector<std::string> words;
  std::size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && text[i] == ' ') ++i;
    const std::size_t j = text.find(' ', i);
    if (i < text.size())
      words.push_back(text.substr(i, j == std::string::npos ? std::string::npos : j - i));
    i = j == std::string::npos ? text.size() : j;
  }
  if (words.size() < 2 || words.size() > 3 || words[1].find('=') == std::string::npos)
    throw k3bench::UserError(fmt::format(
        "--case '{}': not \"<op> <shape> [params]\" (e.g. \"linear_decode n=256,k=256 threads=1\")",
        text));
  return {words[0], words[1], words.size() == 3 ? words[2] : ""};
}

BisectRange resolve_range(const std::string& repo, const std::string& good,
                          const std::string& bad) {
  BisectRange r;
  r.good = resolve_commit(repo, good);
  if (r.good.empty())
    throw k3bench::UserError(fmt::format("--good {}: no such revision in {}", good, repo));
  r.bad = resolve_commit(repo, bad);
  if (r.bad.empty())
    throw k3bench::UserError(fmt::format("--bad {}: no such revision in {}", bad, repo));
  if (r.good == r.bad)
    throw k3bench::UserError(
        fmt::format("--good {} and --bad {} are the same commit {}: nothing to bisect", good, bad,
                    r.good.substr(0, 12)));
  if (k3nightly::revision_ancestry(repo, r.good, r.bad) != k3nightly::Ancestry::kAncestor)
    throw k3bench::UserError(fmt::format(
        "--good {} is not an ancestor of --bad {}: bisect needs good before bad", good, bad));
  r.commits = commits_between(repo, r.good, r.bad);
  return r;
}

int BisectResult::skipped() const {
  int n = 0;
  for (const auto& p : probes) n += p.outcome == ProbeOutcome::kSkip;
  return n;
}

BisectResult run_bisection(const k3targets::Target* place, const BisectRequest& request,
                           const BisectRange& range,
                           const std::function<void(const Probe&)>& on_probe) {
  return Bisector(place, request, range).run(on_probe);
}

std::string bisect_table(const BisectResult& r) {
  const bool counts = r.instructions;
  std::size_t width = 4;
  for (const auto& p : r.probes)
    for (const auto& e : p.cases) width = std::max(width, e.label.size());
  std::string s = fmt::format("{:>3} {:>6}  {:<12} {:<5}  {:<{}} {:>9}  {:<22} {}\n", "#", "pos",
                              "commit", "", "case", width, "effect", "95% CI",
                              counts ? "exact verdict" : "MDE, rounds, verdict");
  const int n = static_cast<int>(r.range.commits.size());
  for (const auto& p : r.probes) {
    const std::string pos = fmt::format("{}/{}", p.index + 1, n);
    if (p.cases.empty()) {
      s += fmt::format("{:>3} {:>6}  {:<12} {:<5}  {}\n", p.seq, pos, p.commit.substr(0, 12),
                       to_string(p.outcome), p.reason);
      continue;
    }
    for (const auto& e : p.cases) {
      const std::string ci = fmt::format("[{:+.1f}%, {:+.1f}%]", 100 * e.ci_low, 100 * e.ci_high);
      const std::string how =
          counts
              ? e.verdict
              : fmt::format("{:.1f}%, {} rounds{}, {}", 100 * e.mde, e.rounds,
                            e.attempts > 1 ? fmt::format(" (run {})", e.attempts) : "", e.verdict);
      s += fmt::format("{:>3} {:>6}  {:<12} {:<5}  {:<{}} {:>+8.2f}%  {:<22} {}\n", p.seq, pos,
                       p.commit.substr(0, 12), to_string(p.outcome), e.label, width, 100 * e.effect,
                       ci, how);
    }
  }
  s += "\n";
  const int probes = static_cast<int>(r.probes.size());
  if (r.status == "found") {
    s += fmt::format("first bad commit: {} ({} probes over {} commits, {} skipped; {:.0f} s)\n",
                     r.candidates.front(), probes, n, r.skipped(), r.wall_s);
  } else if (r.status == "range") {
    s += fmt::format(
        "the first bad commit is one of {} (skipped commits hide which; {} probes, {:.0f} s):\n",
        r.candidates.size(), probes, r.wall_s);
    for (const auto& c : r.candidates) s += "  " + c + "\n";
  } else {
    s += fmt::format("{}: {}\n", r.status, r.why);
  }
  return s;
}

}  // namespace k3bisect
