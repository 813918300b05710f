// `k3tune bisect`: parse options, check the revisions and cases (nothing built or measured on bad
// input), run the bisection (k3::bisect) where the command measures, print its table.
#include <filesystem>
#include <iostream>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "apps/bisect/bisection.h"
#include "apps/bisect/nightly_regression.h"
#include "apps/cli/app_context.h"
#include "apps/cli/measuring_place.h"
#include "harness/host/bench/child_output.h"
#include "harness/host/bench/measure_settings.h"
#include "reports/runner_store.h"

namespace k3cli {
namespace {

nlohmann::json effect_json(const k3bisect::CaseEffect& e) {
  return {{"case", e.label},        {"outcome", k3verdict::to_string(e.outcome)},
          {"effect", e.effect},     {"ci95", {e.ci_low, e.ci_high}},
          {"mde", e.mde},           {"rounds", e.rounds},
          {"attempts", e.attempts}, {"instructions", e.instructions},
          {"delta", e.delta},       {"tolerance", e.tolerance},
          {"verdict", e.verdict},   {"run_uuid", e.run_uuid}};
}

nlohmann::json result_json(const k3bisect::BisectResult& r) {
  nlohmann::json probes = nlohmann::json::array();
  for (const auto& p : r.probes) {
    nlohmann::json cases = nlohmann::json::array();
    for (const auto& e : p.cases) cases.push_back(effect_json(e));
    probes.push_back({{"seq", p.seq},
                      {"position", p.index + 1},
                      {"commit", p.commit},
                      {"title", p.title},
                      {"outcome", k3bisect::to_string(p.outcome)},
                      {"reason", p.reason},
                      {"build_hash", p.hash},
                      {"build_s", p.build_s},
                      {"measure_s", p.measure_s},
                      {"cases", cases}});
  }
  nlohmann::json chased = nlohmann::json::array();
  for (const auto& e : r.chased) chased.push_back(effect_json(e));
  return {{"schema", k3bench::schema_id(k3bench::ChildOutput::kBisect)},
          {"bisection_id", r.id},
          {"good", r.range.good},
          {"bad", r.range.bad},
          {"commits", r.range.commits.size()},
          {"status", r.status},
          {"why", r.why},
          {"candidates", r.candidates},
          {"chased", chased},
          {"probes", probes},
          {"skipped", r.skipped()},
          {"wall_s", r.wall_s}};
}

struct BisectArgs {
  std::string good, bad, from_nightly, cache, variant, plugin, path = "rvv";
  std::vector<std::string> cases;
  bool instructions = false, remeasure = true;
  int vlen = 1024, processes = 6, attempts = 3;
  int jobs = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  std::string reps, min_time;
  PlaceArgs place;
};

// What is bisected: the revisions and cases given, or the regression a nightly found.
struct BisectSubject {
  std::string good, bad, nightly_id;
  std::vector<k3bisect::BisectCase> cases;
};

void add_subject_options(CLI::App* cmd, BisectArgs& a) {
  cmd->add_option("--good", a.good, "a revision without the regression (an ancestor of --bad)");
  cmd->add_option("--bad", a.bad, "a revision with it");
  cmd->add_option("--case", a.cases, "\"<op> <shape> [params]\" (repeatable)");
  cmd->add_option(
      "--from-nightly", a.from_nightly,
      "a nightly folder: its regressed cells, between the previous nightly's revision and its own");
}

void add_counting_options(CLI::App* cmd, BisectArgs& a) {
  cmd->add_flag("--instructions", a.instructions,
                "bisect exact instruction counts under qemu-user (riscv64 runner per commit) "
                "instead of time");
  cmd->add_option("--vlen", a.vlen, "with --instructions: the emulated VLEN")
      ->capture_default_str();
  cmd->add_option("--path", a.path, "with --instructions: the kernel path counted")
      ->capture_default_str();
  cmd->add_option("--plugin", a.plugin,
                  "with --instructions: counting plugin (default "
                  "build/third_party/qemu-plugin/libinsn_count.so)");
  cmd->add_option(
      "--variant", a.variant,
      "runner preset built per commit (default: the place's variant; rvv with --instructions)");
}

void add_probe_options(CLI::App* cmd, BisectArgs& a) {
  cmd->add_option("-P,--processes", a.processes,
                  "rounds of a probe's first A/B run (doubled when re-measured)")
      ->check(CLI::Range(2, 1000))
      ->capture_default_str();
  cmd->add_option(
         "--attempts", a.attempts,
         "A/B runs of a probe at most (more rounds each while its MDE exceeds the effect chased)")
      ->check(CLI::Range(1, 10))
      ->capture_default_str();
  cmd->add_flag("!--no-remeasure", a.remeasure,
                "count disturbed processes as they are instead of measuring them again (bench "
                "--no-remeasure)");
  cmd->add_option("-R,--reps", a.reps, "measured repetitions per process");
  cmd->add_option("--min-time", a.min_time, "seconds per repetition");
}

// The revisions and cases, checked (a nightly's read from its folder and the database).
BisectSubject bisect_subject(const AppContext& ctx, const BisectArgs& a, const CLI::App& cmd,
                             const std::string& rules) {
  BisectSubject s{a.good, a.bad, "", {}};
  for (const auto& c : a.cases) s.cases.push_back(k3bisect::parse_case(c));
  if (!a.from_nightly.empty()) {
    if (!s.good.empty() || !s.bad.empty() || !s.cases.empty())
      throw k3bench::UserError(
          "--from-nightly: not with --good, --bad or --case (the nightly names them)");
    if (a.instructions)
      throw k3bench::UserError(
          "--from-nightly: bisects the nightly's timing verdict, not --instructions");
    const auto n = k3bisect::nightly_regression(a.from_nightly, ctx.db_path(), rules);
    s.good = n.good_revision;
    s.bad = n.bad_revision;
    s.cases = n.cases;
    s.nightly_id = n.nightly_id;
  }
  if (s.good.empty() || s.bad.empty())
    throw k3bench::UserError("bisect: --good and --bad (or --from-nightly) are required");
  if (s.cases.empty()) throw k3bench::UserError("bisect: at least one --case (or --from-nightly)");
  if (a.instructions) {
    if (!a.place.farm.empty() || cmd.get_option("--target")->count() > 0)
      throw k3bench::UserError(
          "--instructions: counts run here under qemu-user (no --target or --farm)");
    for (const auto& c : s.cases)
      if (!c.params.empty())
        throw k3bench::UserError(fmt::format(
            "--case '{}': --instructions counts an op and shape (no params)", c.label()));
  }
  return s;
}

// The bisection's request from the options, checked as far as it can be before a build.
k3bisect::BisectRequest bisect_request(const AppContext& ctx, const BisectArgs& a,
                                       const CLI::App& cmd, const BisectSubject& s,
                                       const std::string& rules) {
  k3bisect::BisectRequest rq;
  rq.root = ctx.root;
  rq.cases = s.cases;
  rq.instructions = a.instructions;
  rq.processes = a.processes;
  rq.attempts = a.attempts;
  rq.remeasure_disturbed = a.remeasure;
  if (!a.reps.empty()) rq.settings.emplace_back("repetitions", a.reps);
  if (!a.min_time.empty()) rq.settings.emplace_back("min_time_s", a.min_time);
  k3bench::MeasureSettings check;  // a bad value is refused now, not after the first build
  for (const auto& [key, value] : rq.settings)
    check.set(key, value, key == "repetitions" ? "--reps" : "--min-time");
  rq.count_path = a.path;
  rq.vlen = a.vlen;
  rq.tools.plugin =
      a.plugin.empty() ? ctx.root + "/build/third_party/qemu-plugin/libinsn_count.so" : a.plugin;
  if (a.instructions && !std::filesystem::exists(rq.tools.plugin))
    throw k3bench::UserError(fmt::format(
        "--plugin: {} is missing (bash scripts/build-qemu-plugin.sh builds it)", rq.tools.plugin));
  rq.db_path = ctx.db_path();
  rq.cache_dir = a.cache.empty()
                     ? (std::filesystem::absolute(rq.db_path).parent_path() / "bisect").string()
                     : a.cache;
  rq.runners_dir = k3reports::default_runners_dir(rq.db_path);
  rq.rules_file = rules;
  rq.nightly_id = s.nightly_id;
  rq.jobs = a.jobs;
  rq.progress = !ctx.quiet;
  rq.command_line = "k3tune bisect";
  for (const auto* o : cmd.get_options())
    if (o->count() > 0 && o->get_name() != "--help")
      for (const auto& v : o->results()) rq.command_line += " " + o->get_name() + " " + v;
  return rq;
}

// One probe's line on stderr: its commit, outcome and each case's effect.
void tell_probe(const k3bisect::BisectRange& range, const k3bisect::Probe& p) {
  std::string line = fmt::format("k3tune: bisect: probe {} {}/{} {}: {}", p.seq, p.index + 1,
                                 range.commits.size(), p.title, k3bisect::to_string(p.outcome));
  if (!p.reason.empty()) line += " (" + p.reason + ")";
  for (const auto& e : p.cases) line += fmt::format("; {} {:+.2f}%", e.label, 100 * e.effect);
  std::cerr << line << fmt::format(" [build {:.0f} s, measure {:.0f} s]\n", p.build_s, p.measure_s);
}

void run_bisect(const AppContext& ctx, const BisectArgs& a, const CLI::App& cmd) {
  // Everything that can be checked without building is checked first (exit 2, nothing done).
  const std::string rules = ctx.root + "/configs/regression.toml";
  const BisectSubject subject = bisect_subject(ctx, a, cmd, rules);
  k3bisect::BisectRequest rq = bisect_request(ctx, a, cmd, subject, rules);
  const auto range = k3bisect::resolve_range(ctx.root, subject.good, subject.bad);
  std::unique_ptr<MeasuringPlace> place;
  if (!a.instructions) place = std::make_unique<MeasuringPlace>(ctx, a.place);
  rq.variant = !a.variant.empty() ? a.variant
               : a.instructions   ? "rvv"
                                  : place->target().config().variant;
  if (!ctx.quiet)
    std::cerr << fmt::format(
        "k3tune: bisect: {} commits after {} up to {}, {} on {}\n", range.commits.size(),
        range.good.substr(0, 12), range.bad.substr(0, 12),
        a.instructions ? "instruction counts" : "time",
        a.instructions ? fmt::format("qemu-user VLEN {}", a.vlen) : place->describe());
  const auto r = k3bisect::run_bisection(place ? &place->target() : nullptr, rq, range,
                                         [&ctx, &range](const k3bisect::Probe& p) {
                                           if (!ctx.quiet) tell_probe(range, p);
                                         });
  if (ctx.json)
    std::cout << result_json(r).dump(2) << "\n";
  else
    std::cout << k3bisect::bisect_table(r);
  if (r.status == "failed" || r.status == "not-reproduced") exit_code() = kProblems;
}

}  // namespace

void add_bisect_command(CLI::App& app, AppContext& ctx) {
  auto* cmd = app.add_subcommand(
      "bisect",
      "find the commit that made a case slower (or count more instructions): builds and "
      "measures commits against the good one, binary search");
  auto a = std::make_shared<BisectArgs>();
  add_subject_options(cmd, *a);
  add_place_options(cmd, a->place);
  add_counting_options(cmd, *a);
  add_probe_options(cmd, *a);
  cmd->add_option("--cache", a->cache,
                  "worktrees and build logs (default: bisect/ next to the database)");
  cmd->add_option("-j,--jobs", a->jobs, "parallel compile jobs")->capture_default_str();
  cmd->callback([&ctx, a, cmd] { run_bisect(ctx, *a, *cmd); });
}

}  // namespace k3cli
