#include "apps/nightly/nightly.h"

#include <algorithm>
#include <chrono>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "apps/nightly/night_reports.h"
#include "apps/nightly/night_summary.h"
#include "apps/nightly/nightly_profile.h"
#include "apps/nightly/notify.h"
#include "apps/nightly/revision_ancestry.h"
#include "apps/nightly/step_detail.h"
#include "apps/scheduler/scheduler.h"
#include "harness/common/sys/text_file.h"
#include "harness/host/bench/provenance.h"
#include "harness/host/bench/user_error.h"
#include "harness/host/farm/board.h"
#include "harness/host/farm/farm.h"
#include "harness/host/launch/launcher.h"
#include "harness/host/store/build_pairing_record.h"
#include "harness/host/store/database.h"
#include "harness/host/store/nightlies.h"
#include "harness/host/targets/target.h"
#include "reports/runner_store.h"
#include "tuner/table.h"

namespace k3nightly {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

std::string utc_stamp() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H%MZ", &tm);
  return buf;
}

using k3sys::read_text;

// Every step's child: this k3tune, on the night's source root, database and targets file.
k3launch::Launcher launcher(const NightlyRequest& rq) {
  return {.self_exe = rq.self_exe,
          .root = rq.root,
          .db_path = rq.db_path,
          .targets_file = rq.targets_file};
}

std::string host_runner(const NightlyRequest& rq) {
  const std::string file =
      rq.targets_file.empty() ? rq.root + "/configs/targets.toml" : rq.targets_file;
  const auto configs = k3targets::load_target_configs(file);
  const auto it = configs.find("local");
  if (it == configs.end()) throw k3bench::UserError(fmt::format("{}: no target 'local'", file));
  return k3targets::make_target(it->second, rq.root)->runner_path();
}

// How the verdict bench measured the two builds, as words for the night's verdict line.
std::string pairing_words(const nlohmann::json& verdict_bench) {
  const auto p = k3store::BuildPairing::from_settings(verdict_bench);
  return p ? " (" + p->text() + ")" : "";
}

// Today's host runner, and the previous nightly's kept runner to interleave it with.
void choose_baseline(const NightlyRequest& rq, k3store::Connection& db, const std::string& id,
                     NightlyState& s) {
  const std::string runner = host_runner(rq);
  if (!fs::exists(runner)) return;
  s.host_hash = k3bench::sha256_file(runner);
  // "Previous" by ancestry: the newest earlier night whose build is an ancestor of tonight's
  // revision (revision_ancestry.h); outside a git checkout, the newest earlier night.
  const std::vector<k3store::NightlyRow> earlier = earlier_nightlies(db, id);
  const std::string head = head_revision(rq.root);
  std::vector<std::string> revisions;
  for (const auto& n : earlier) revisions.push_back(n.host_revision);
  const AncestorChoice choice = newest_ancestor(revisions, [&](const std::string& rev) {
    return head.empty() ? Ancestry::kUnknown : revision_ancestry(rq.root, rev, head);
  });
  if (!choice.index) {
    s.baseline_note = earlier.empty()
                          ? "no previous nightly in this database: no regression verdict tonight"
                          : "no earlier nightly's build is an ancestor of tonight's revision (" +
                                choice.note + "): no regression verdict tonight";
    return;
  }
  const k3store::NightlyRow* prev = &earlier[*choice.index];
  if (prev->host_build_hash == s.host_hash) {
    s.baseline_note = fmt::format(
        "same host runner as nightly {} ({}): the code did not change, nothing to compare",
        prev->nightly_id, s.host_hash.substr(0, 12));
    return;
  }
  const auto kept =
      k3reports::find_runner(k3reports::default_runners_dir(rq.db_path), prev->host_build_hash, "");
  if (kept.path.empty()) {
    s.baseline_note = fmt::format("the runner of nightly {} ({}) was not kept: {}",
                                  prev->nightly_id, prev->host_build_hash.substr(0, 12), kept.note);
    return;
  }
  s.baseline_runner = kept.path;
  s.baseline_note = fmt::format("verdict against nightly {} (runner {}; {}), measured interleaved",
                                prev->nightly_id, prev->host_build_hash.substr(0, 12), choice.note);
}

}  // namespace

// The farm's shape for the plan: built-in or not, its scheduler (which refuses a --reservation it
// cannot honour: bad input, nothing runs), and the runner variants its boards deploy (a
// board with an explicit runner path deploys that file: nothing to build for it).
NightlyFarm nightly_farm(const NightlyRequest& rq) {
  const k3farm::FarmConfig config = k3farm::Farm::load(rq.farm, rq.root);
  NightlyFarm f;
  f.builtin = config.source == "built-in";
  const auto scheduler = k3scheduler::scheduler_for(
      config, {.root = rq.root, .db_path = rq.db_path, .targets_file = rq.targets_file});
  scheduler->accept_reservation(rq.reservation);  // bad input: nothing runs
  f.boards_only_in_jobs = scheduler->boards_only_in_jobs();
  f.scheduler = scheduler->title();
  for (const auto& b : config.boards) {
    f.boards.push_back(b.name);
    try {
      f.board_runner[b.name] = k3farm::Board(config, b).local_runner(rq.root);
    } catch (const std::exception&) {  // a variant without a preset: its deploy step says so
    }
  }
  for (const auto& b : config.boards) {
    if (!b.runner.empty()) continue;
    if (std::find(f.variants.begin(), f.variants.end(), b.variant) == f.variants.end())
      f.variants.push_back(b.variant);
  }
  return f;
}

// The site after the night: `k3tune publish` (incremental; it leaves pages a person edited and
// files it did not write). Its outcome is one line and never the night's verdict: a site that
// cannot be written is a note, the night's exit code stands.
namespace {

void publish_site(const NightlyRequest& rq, NightlyOutcome& o) {
  if (o.site.empty()) {
    o.publish_note = "not published (--site none)";
    return;
  }
  const int code = k3launch::run_child(launcher(rq).argv(k3launch::Publish{o.site}),
                                       {o.dir + "/logs/publish.out", o.dir + "/logs/publish.log"});
  if (code != 0) {
    o.publish_note = fmt::format("publish failed (exit {}): see {}/logs/publish.log", code, o.dir);
    o.site.clear();
  }
  fmt::print("site: {}\n", o.site.empty() ? o.publish_note : o.site + "/index.html");
  std::fflush(stdout);
}

}  // namespace

namespace {

// A new night's directory (refused where a night already ran), or the one --resume names with the
// request that night was started with (what the resuming command does not name again); o.dir and
// o.id, and rq.site, are set.
void open_night_directory(NightlyRequest& rq, NightlyOutcome& o) {
  if (!rq.resume.empty()) {
    const std::string meta = rq.resume + "/nightly.json";
    if (!fs::exists(meta))
      throw k3bench::UserError(
          fmt::format("--resume {}: not a nightly directory (no nightly.json)", rq.resume));
    const auto j = nlohmann::json::parse(read_text(meta));
    rq.profile = j.value("profile", rq.profile);
    rq.farm = j.value("farm", rq.farm);
    rq.build = j.value("build", rq.build);
    rq.reservation = j.value("reservation", rq.reservation);
    rq.site = j.value("site", rq.site);
    // The night's own configuration, unless the resuming command names one.
    if (rq.notify_config.empty()) rq.notify_config = j.value("notify_config", std::string());
    o.dir = fs::absolute(rq.resume).lexically_normal().string();
  } else {
    o.dir = rq.dir.empty() ? rq.root + "/nightly/" + utc_stamp()
                           : fs::absolute(rq.dir).lexically_normal().string();
    if (fs::exists(o.dir + "/nightly.json"))
      throw k3bench::UserError(fmt::format(
          "{}: a nightly already ran here; continue it with --resume {}", o.dir, o.dir));
  }
  if (!o.dir.empty() && o.dir.back() == '/') o.dir.pop_back();
  o.id = fs::path(o.dir).filename().string();
  if (rq.site.empty()) rq.site = (fs::path(o.dir).parent_path() / "site").string();
  if (rq.site != "none") o.site = fs::absolute(rq.site).lexically_normal().string();
}

// nightly.json: what --resume reads back (the night's request).
void write_night_meta(const NightlyRequest& rq, const NightlyOutcome& o) {
  std::ofstream(o.dir + "/nightly.json") << nlohmann::json{{"id", o.id},
                                                           {"profile", rq.profile},
                                                           {"farm", rq.farm},
                                                           {"build", rq.build},
                                                           {"reservation", rq.reservation},
                                                           {"site", rq.site},
                                                           {"notify_config", rq.notify_config},
                                                           {"database", rq.db_path}}
                                                .dump(2)
                                         << "\n";
}

// What tonight's steps compare with: the previous nightly's board verdicts, its tables and its
// instruction counts.
void take_what_earlier_nights_left(k3store::Connection& db, const std::string& night,
                                   const std::vector<NightlyStep>& steps, NightlyState& state) {
  for (const auto& step : steps) {
    if (step.name.rfind("board-verdict-", 0) != 0) continue;
    if (const auto prev = previous_step(db, night, step.name))
      state.previous_steps[step.name] = {
          {"nightly", prev->nightly_id},
          {"detail", prev->detail_json.empty() ? nlohmann::json::object()
                                               : nlohmann::json::parse(prev->detail_json)}};
  }
  for (const char* tuning : {"tune-farm", "tune-local"})
    if (const auto prev = previous_step(db, night, tuning);
        prev && state.previous_tables_dir.empty()) {
      state.previous_tables_nightly = prev->nightly_id;
      state.previous_tables_dir = nightly_dir(db, prev->nightly_id);
    }
  if (const auto prev = previous_step(db, night, "count")) {
    state.previous_counts =
        prev->detail_json.empty() ? nlohmann::json() : nlohmann::json::parse(prev->detail_json);
    state.previous_counts_nightly = prev->nightly_id;
  }
}

}  // namespace

namespace {

// Runs the night's steps in order, each in a child process, and records each in the database;
// stops taking steps after the first that fails.
struct StepRunner {
  NightlyRequest& rq;
  const NightlyOutcome& o;
  k3store::Connection& db;
  NightlyState& state;
  std::size_t total;
  std::vector<StepLine> lines{};
  bool failed = false, cells_failed = false;
  int verdict_code = -1;
  std::vector<std::string> regressed{};  // verdict steps that found a regression

  void run(std::size_t i, const NightlyStep& step) {
    StepLine line{step.name, "done", "", 0, 0};
    const auto earlier = find_step(db, o.id, step.name);
    if (earlier && earlier->status == "done") return take_done(i, step, *earlier, line);
    if (const std::string why = step.skip ? step.skip(state) : ""; !why.empty()) {
      line.status = "skipped";
      line.note = why;
      lines.push_back(line);
      fmt::print("[{}/{}] {}: skipped: {}\n", i + 1, total, step.name, why);
      return;
    }
    if (step.name == "verdict-bench") choose_baseline(rq, db, o.id, state);
    const k3launch::Request request = step.request(state);
    const std::string command = k3launch::command_text(request);
    fmt::print("[{}/{}] {}: {}\n", i + 1, total, step.name, command);
    std::fflush(stdout);
    const std::string log = o.dir + "/logs/" + step.name + ".log";
    if (step.leases && earlier) recover_stale_leases(i, step, log);
    begin_step(db, o.id, step.name, static_cast<int>(i), command);
    const auto t0 = Clock::now();
    const k3bench::ChildOutput form = k3launch::output_of(request);
    const std::string out_path =
        o.dir + "/logs/" + step.name + (form != k3bench::ChildOutput::kNone ? ".json" : ".out");
    const int code = k3launch::run_child(launcher(rq).argv(request), {out_path, log}, step.env);
    line.wall_s = std::chrono::duration<double>(Clock::now() - t0).count();
    line.exit_code = code;
    std::vector<std::string> output_problems;
    nlohmann::json detail = form != k3bench::ChildOutput::kNone
                                ? step_detail(rq.root, form, out_path, output_problems)
                                : nlohmann::json::object();
    const bool ok = step.ok_codes.count(code) > 0 && output_problems.empty();
    if (ok && step.name.rfind("board-verdict-", 0) == 0) keep_board_runner(step.name, detail);
    state.details[step.name] = detail;
    state.exit_codes[step.name] = code;
    finish_step(db, o.id, step.name, ok, code, line.wall_s, detail.dump());
    if (!ok) {
      failed = true;
      line.status = "FAILED";
      line.note =
          output_problems.empty()
              ? fmt::format("see {}/logs/{}.log", o.dir, step.name)
              : fmt::format("{}: does not follow {} ({}): {}", out_path, k3bench::schema_id(form),
                            k3bench::schema_path(rq.root, form), output_problems.front());
    } else if (code == 3) {
      cells_failed = true;
      line.note = "some cells failed or boards were quarantined";
    } else if (code == 1) {
      line.note = fmt::format(
          "the table is NOT VERIFIED (an entry slower than the defaults or not "
          "measured): see {}/logs/{}.out",
          o.dir, step.name);
    }
    // The night's verdict is its worst: a regression (4) over failed cells (3) over none (0).
    if (step.verdict && ok) {
      verdict_code = std::max(verdict_code, code);
      if (code == 4) regressed.push_back(step.name);
    }
    if (detail.contains("samples_after"))
      line.note += fmt::format("{}samples in the database {} -> {}", line.note.empty() ? "" : "; ",
                               detail.value("samples_before", 0), detail.value("samples_after", 0));
    fmt::print("[{}/{}] {}: {} in {:.1f} s (exit {}){}\n", i + 1, total, step.name, line.status,
               line.wall_s, code, line.note.empty() ? "" : "; " + line.note);
    std::fflush(stdout);
    lines.push_back(line);
  }

 private:
  // A step an earlier attempt finished: its detail and exit code stand.
  void take_done(std::size_t i, const NightlyStep& step, const k3store::NightlyStepRow& done,
                 StepLine& line) {
    state.details[step.name] = done.detail_json.empty() ? nlohmann::json::object()
                                                        : nlohmann::json::parse(done.detail_json);
    state.exit_codes[step.name] = done.exit_code.value_or(-1);
    line.note = "done by an earlier attempt";
    lines.push_back(line);
    fmt::print("[{}/{}] {}: done earlier, skipped\n", i + 1, total, step.name);
  }

  // A farm step cut short earlier left its leases behind, held by this nightly's dead attempt.
  void recover_stale_leases(std::size_t i, const NightlyStep& step, const std::string& log) {
    const int rc = k3launch::run_child(launcher(rq).argv(k3launch::FarmReleaseStale{rq.farm}),
                                       {o.dir + "/logs/" + step.name + "-release.out", log});
    fmt::print(
        "[{}/{}] {}: cut short earlier; stale leases it left recovered (k3tune farm "
        "release --stale: exit {})\n",
        i + 1, total, step.name, rc);
  }

  // Tonight's board runner is kept by build hash: the next nightly measures against it (a first
  // night's farm bench, without a baseline, does not print the hash: it is the file's).
  void keep_board_runner(const std::string& step, nlohmann::json& detail) {
    const std::string runner =
        state.board_runner[step.substr(std::string("board-verdict-").size())];
    if (!detail.contains("build_hash") && fs::exists(runner))
      detail["build_hash"] = k3bench::sha256_file(runner);
    if (detail.contains("build_hash"))
      k3reports::keep_runner(state.runners_dir, detail["build_hash"], runner);
  }
};

// The night's verdict line and exit code from its steps; returns the status stored.
std::string judge_night(const StepRunner& r, const NightlyState& state, NightlyOutcome& o) {
  if (r.failed) {
    o.exit_code = 1;
    o.verdict = fmt::format("a step failed; continue with: k3tune nightly --resume {}", o.dir);
    return "failed";
  }
  if (r.verdict_code == 4) {
    o.exit_code = 4;
    o.verdict = fmt::format("REGRESSION against the previous nightly: {} (see summary.md){}",
                            fmt::join(r.regressed, ", "),
                            pairing_words(state.details.value("verdict-bench", nlohmann::json())));
    return "regression";
  }
  o.exit_code = r.cells_failed || r.verdict_code == 3 ? 3 : 0;
  o.verdict = state.baseline_runner.empty()
                  ? fmt::format("no timing verdict ({})", state.baseline_note)
                  : "no timing regression against the previous nightly" +
                        pairing_words(state.details.value("verdict-bench", nlohmann::json()));
  std::vector<std::string> boards_judged;
  for (const auto& l : r.lines)
    if (l.name.rfind("board-judge-", 0) == 0 && l.status == "done")
      boards_judged.push_back(l.name.substr(std::string("board-judge-").size()));
  if (!boards_judged.empty())
    o.verdict += fmt::format(
        "; boards: no regression on {} (tonight's runner against the previous nightly's, "
        "on the board)",
        fmt::join(boards_judged, ", "));
  const auto judged = std::count_if(r.lines.begin(), r.lines.end(), [](const StepLine& l) {
    return l.name.rfind("count-verdict-", 0) == 0 && l.status == "done";
  });
  if (judged > 0)
    o.verdict += fmt::format("; instruction counts: no increase against nightly {}",
                             state.previous_counts_nightly);
  if (o.exit_code == 3) o.verdict += "; some cells failed or boards were quarantined";
  return "ok";
}

}  // namespace

NightlyOutcome run_nightly(const NightlyRequest& in) {
  const auto start = Clock::now();
  NightlyRequest rq = in;
  NightlyOutcome o;
  open_night_directory(rq, o);
  const NightlyFarm farm = nightly_farm(rq);
  const auto steps = nightly_steps(rq.profile, rq.build, farm);
  if (!rq.notify_config.empty()) rq.notify_config = fs::absolute(rq.notify_config).string();
  const NotifyConfig notify =
      rq.notify_config.empty() ? NotifyConfig{} : load_notify_config(rq.notify_config);

  fs::create_directories(o.dir + "/tables");
  fs::create_directories(o.dir + "/logs");
  write_night_meta(rq, o);
  auto db = k3store::open_for_writing(rq.db_path);
  begin_nightly(*db, {o.id, rq.profile, o.dir, "", "running", std::nullopt, "", "", ""});
  fmt::print("nightly {}: {} profile, farm {}, {} steps; artifacts {}; database {}\n", o.id,
             rq.profile, rq.farm, steps.size(), o.dir, rq.db_path);
  std::fflush(stdout);

  NightlyState state;
  state.dir = o.dir;
  state.farm = rq.farm;
  state.reservation = rq.reservation;
  state.runners_dir = k3reports::default_runners_dir(rq.db_path);
  state.board_runner = farm.board_runner;
  take_what_earlier_nights_left(*db, o.id, steps, state);
  StepRunner runner{rq, o, *db, state, steps.size()};
  for (std::size_t i = 0; i < steps.size() && !runner.failed; ++i) runner.run(i, steps[i]);
  if (state.host_hash.empty() && !runner.failed) choose_baseline(rq, *db, o.id, state);
  const std::string status = judge_night(runner, state, o);
  finish_nightly(*db, o.id, status, o.exit_code, runner.failed ? "" : state.host_hash,
                 state.details.value("verdict-bench", nlohmann::json::object())
                     .value("run_uuid", std::string()));
  if (runner.failed)
    o.site.clear(), o.publish_note = "not published: a step failed";
  else
    publish_site(rq, o);
  o.wall_s = std::chrono::duration<double>(Clock::now() - start).count();
  write_night_reports(o, rq, runner.lines, state, runner.failed);
  notify_after_night(notify,
                     {o.id, o.dir, rq.profile, rq.farm, status, o.verdict, o.exit_code,
                      state.details, state.exit_codes, state.previous_counts_nightly},
                     *db, static_cast<int>(steps.size()));
  return o;
}

}  // namespace k3nightly
