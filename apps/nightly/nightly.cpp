#include "apps/nightly/nightly.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

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

#include "apps/nightly/board_events_section.h"
#include "apps/nightly/nightly_profile.h"
#include "apps/nightly/revision_ancestry.h"
#include "apps/scheduler/scheduler.h"
#include "harness/host/bench/provenance.h"
#include "harness/host/bench/user_error.h"
#include "harness/host/farm/board.h"
#include "harness/host/farm/farm.h"
#include "harness/host/store/database.h"
#include "harness/host/store/nightlies.h"
#include "harness/host/targets/target.h"
#include "reports/html.h"
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

std::string read_text(const std::string& path) {
  std::ifstream f(path);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

// Runs `argv` in this process group (a kill of the nightly takes its steps with it), stdout to
// `out_path`, stderr to `log_path`. Returns the exit code (128 + signal when killed).
int run_step(const std::vector<std::string>& argv, const std::string& out_path,
             const std::string& log_path, const std::map<std::string, std::string>& env = {}) {
  const int out = ::open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  const int log = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  if (out < 0 || log < 0)
    throw k3bench::UserError(fmt::format("{}: cannot write the step's log", log_path));
  const pid_t pid = fork();
  if (pid == 0) {
    dup2(out, STDOUT_FILENO);
    dup2(log, STDERR_FILENO);
    for (const auto& [k, v] : env) setenv(k.c_str(), v.c_str(), 1);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execv(args[0], args.data());
    _exit(127);
  }
  close(out);
  close(log);
  if (pid < 0) return 127;
  int st = 0;
  while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

// What later steps and the summary need from a step's JSON output.
nlohmann::json detail_of(const std::string& out_path) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(read_text(out_path));
  } catch (const nlohmann::json::exception&) {
    return nlohmann::json::object();
  }
  nlohmann::json d = nlohmann::json::object();
  for (const char* k : {"run_uuid", "build_hash", "builds", "sweep_uuid", "runs", "quarantined",
                        "unused_boards", "measured_cells", "skipped_cells", "failed_cells",
                        "unmeasured_cells", "samples_before", "samples_after", "comparisons"})
    if (j.is_object() && j.contains(k)) d[k] = j[k];
  // `tune --farm --json`: per fingerprint group its boards, table and objective (no jobs).
  if (j.is_object() && j.contains("groups") && j["groups"].is_array()) {
    d["groups"] = nlohmann::json::array();
    for (const auto& g : j["groups"])
      d["groups"].push_back({{"boards", g.value("boards", nlohmann::json::array())},
                             {"table", g.value("table", "")},
                             {"objective", g.value("objective", "")},
                             {"lost", g.value("lost", nlohmann::json::object())},
                             {"unfinished", g.value("unfinished", nlohmann::json::array())}});
  }
  // `count --json`: one row per counted case, each naming the run of its runner.
  if (j.is_array()) {
    d["counts"] = nlohmann::json::array();
    for (const auto& row : j)
      if (row.is_object() && row.contains("run_uuid"))
        d["counts"].push_back({{"path", row.value("path", "")},
                               {"op", row.value("op", "")},
                               {"shape", row.value("shape", "")},
                               {"vlen", row.value("vlen", 0)},
                               {"instructions_per_call", row.value("instructions_per_call", 0.0)},
                               {"jitter", row.value("jitter", 0.0)},
                               {"run_uuid", row["run_uuid"]}});
  }
  return d;
}

std::string host_runner(const NightlyRequest& rq) {
  const std::string file =
      rq.targets_file.empty() ? rq.root + "/configs/targets.toml" : rq.targets_file;
  const auto configs = k3targets::load_target_configs(file);
  const auto it = configs.find("local");
  if (it == configs.end()) throw k3bench::UserError(fmt::format("{}: no target 'local'", file));
  return k3targets::make_target(it->second, rq.root)->runner_path();
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

struct StepLine {
  std::string name, status, note;
  int exit_code = 0;
  double wall_s = 0;
};

std::string summary_text(const NightlyOutcome& o, const NightlyRequest& rq,
                         const std::vector<StepLine>& lines, const NightlyState& s) {
  std::string t = fmt::format("# Nightly {} ({} profile, farm {})\n\n", o.id, rq.profile, rq.farm);
  t += fmt::format("Verdict: {} (exit {})\n\n", o.verdict, o.exit_code);
  if (!s.baseline_note.empty()) t += fmt::format("Baseline: {}\n\n", s.baseline_note);
  t += "| step | status | exit | wall s | note |\n|---|---|---|---|---|\n";
  for (const auto& l : lines)
    t += fmt::format("| {} | {} | {} | {:.1f} | {} |\n", l.name, l.status, l.exit_code, l.wall_s,
                     l.note);
  // The verdict of each board fingerprint: its report's summary (paired A/B on the board).
  for (const auto& l : lines) {
    if (l.name.rfind("board-judge-", 0) != 0) continue;
    const std::string board = l.name.substr(std::string("board-judge-").size());
    t += fmt::format(
        "\n## Board {}: tonight's runner against the previous nightly's, on the board\n\n", board);
    const std::string report = o.dir + "/boards/" + board + "/summary.md";
    if (l.status == "done" && fs::exists(report)) {
      std::string text = read_text(report);  // the verdict; the figures are in its report.html
      if (const auto figures = text.find("\n## Figures"); figures != std::string::npos)
        text.resize(figures + 1);
      t += text + fmt::format("\nFigures: {}/boards/{}/report.html\n", o.dir, board);
    } else {
      t += fmt::format("{}: {}\n", l.status, l.note);
    }
  }
  // Tonight's tables against the previous nightly's of the same name (`k3tune table diff`).
  if (fs::exists(o.dir + "/tables")) {
    std::vector<std::string> names;
    for (const auto& f : fs::directory_iterator(o.dir + "/tables"))
      if (f.path().extension() == ".json") names.push_back(f.path().filename().string());
    std::sort(names.begin(), names.end());
    if (!names.empty())
      t += fmt::format("\n## Tables against nightly {}\n\n",
                       s.previous_tables_nightly.empty() ? "(none)" : s.previous_tables_nightly);
    for (const auto& name : names) {
      const std::string old_table = s.previous_tables_dir + "/tables/" + name;
      if (s.previous_tables_dir.empty() || !fs::exists(old_table)) {
        t += fmt::format("{}: new tonight (no table of that name before)\n", name);
        continue;
      }
      try {
        const std::string diff = k3tuner::diff_tables(
            k3tuner::read_table(old_table), k3tuner::read_table(o.dir + "/tables/" + name));
        t += fmt::format("{}:\n```\n{}```\n", name, diff.empty() ? "identical\n" : diff);
      } catch (const std::exception& e) {
        t += fmt::format("{}: not compared: {}\n", name, e.what());
      }
    }
  }
  // The exact verdicts of the instruction counts, one section per counted path.
  for (const auto& l : lines) {
    if (l.name.rfind("count-verdict-", 0) != 0) continue;
    const std::string path = l.name.substr(std::string("count-verdict-").size());
    t +=
        fmt::format("\n## Instruction counts, {} runner: exact verdict against nightly {}\n\n",
                    path, s.previous_counts_nightly.empty() ? "(none)" : s.previous_counts_nightly);
    const std::string out = o.dir + "/logs/" + l.name + ".out";
    if (l.status == "done" && fs::exists(out))
      t += read_text(out) + "\n";
    else
      t += fmt::format("{}: {}\n", l.status, l.note);
  }
  // Quarantines and power cycles of the farm's boards while the nightly ran.
  t += board_events_section(rq.farm, rq.root, rq.db_path,
                            static_cast<double>(std::time(nullptr)) - o.wall_s - 1);
  t += fmt::format(
      "\nReport: {0}/report.html, {0}/summary.md\nTables: {0}/tables/\nLogs: {0}/logs/\n"
      "Database: {1}\n",
      o.dir, rq.db_path);
  return t;
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

NightlyOutcome run_nightly(const NightlyRequest& in) {
  const auto start = Clock::now();
  NightlyRequest rq = in;
  NightlyOutcome o;
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
  const NightlyFarm farm = nightly_farm(rq);
  const auto steps = nightly_steps(rq.profile, rq.build, farm);

  fs::create_directories(o.dir + "/tables");
  fs::create_directories(o.dir + "/logs");
  std::ofstream(o.dir + "/nightly.json") << nlohmann::json{{"id", o.id},
                                                           {"profile", rq.profile},
                                                           {"farm", rq.farm},
                                                           {"build", rq.build},
                                                           {"reservation", rq.reservation},
                                                           {"database", rq.db_path}}
                                                .dump(2)
                                         << "\n";
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
  for (const auto& step : steps) {
    if (step.name.rfind("board-verdict-", 0) != 0) continue;
    if (const auto prev = previous_step(*db, o.id, step.name))
      state.previous_steps[step.name] = {
          {"nightly", prev->nightly_id},
          {"detail", prev->detail_json.empty() ? nlohmann::json::object()
                                               : nlohmann::json::parse(prev->detail_json)}};
  }
  for (const char* tuning : {"tune-farm", "tune-local"})
    if (const auto prev = previous_step(*db, o.id, tuning);
        prev && state.previous_tables_dir.empty()) {
      state.previous_tables_nightly = prev->nightly_id;
      state.previous_tables_dir = nightly_dir(*db, prev->nightly_id);
    }
  if (const auto prev = previous_step(*db, o.id, "count")) {
    state.previous_counts =
        prev->detail_json.empty() ? nlohmann::json() : nlohmann::json::parse(prev->detail_json);
    state.previous_counts_nightly = prev->nightly_id;
  }
  std::vector<StepLine> lines;
  bool failed = false, cells_failed = false;
  int verdict_code = -1;
  std::vector<std::string> regressed;  // verdict steps that found a regression
  for (std::size_t i = 0; i < steps.size() && !failed; ++i) {
    const NightlyStep& step = steps[i];
    StepLine line{step.name, "done", "", 0, 0};
    const auto earlier = find_step(*db, o.id, step.name);
    if (const auto& done = earlier; done && done->status == "done") {
      state.details[step.name] = done->detail_json.empty()
                                     ? nlohmann::json::object()
                                     : nlohmann::json::parse(done->detail_json);
      state.exit_codes[step.name] = done->exit_code.value_or(-1);
      line.note = "done by an earlier attempt";
      lines.push_back(line);
      fmt::print("[{}/{}] {}: done earlier, skipped\n", i + 1, steps.size(), step.name);
      continue;
    }
    if (step.skip) {
      if (const std::string why = step.skip(state); !why.empty()) {
        line.status = "skipped";
        line.note = why;
        lines.push_back(line);
        fmt::print("[{}/{}] {}: skipped: {}\n", i + 1, steps.size(), step.name, why);
        continue;
      }
    }
    if (step.name == "verdict-bench") choose_baseline(rq, *db, o.id, state);
    std::vector<std::string> argv{rq.self_exe, "--root", rq.root, "--db", rq.db_path, "-q"};
    if (!rq.targets_file.empty()) argv.insert(argv.end(), {"--targets", rq.targets_file});
    const auto args = step.args(state);
    argv.insert(argv.end(), args.begin(), args.end());
    const std::string command = fmt::format("k3tune {}", fmt::join(args, " "));
    fmt::print("[{}/{}] {}: {}\n", i + 1, steps.size(), step.name, command);
    std::fflush(stdout);
    if (step.leases && earlier) {
      std::vector<std::string> release{rq.self_exe, "--root", rq.root, "--db",    rq.db_path,
                                       "farm",      "--farm", rq.farm, "release", "--stale"};
      const std::string log = o.dir + "/logs/" + step.name + ".log";
      const int rc = run_step(release, o.dir + "/logs/" + step.name + "-release.out", log);
      fmt::print(
          "[{}/{}] {}: cut short earlier; stale leases it left recovered (k3tune farm "
          "release --stale: exit {})\n",
          i + 1, steps.size(), step.name, rc);
    }
    begin_step(*db, o.id, step.name, static_cast<int>(i), command);
    const auto t0 = Clock::now();
    const std::string out_path = o.dir + "/logs/" + step.name + (step.json ? ".json" : ".out");
    const int code = run_step(argv, out_path, o.dir + "/logs/" + step.name + ".log", step.env);
    line.wall_s = std::chrono::duration<double>(Clock::now() - t0).count();
    line.exit_code = code;
    nlohmann::json detail = step.json ? detail_of(out_path) : nlohmann::json::object();
    const bool ok = step.ok_codes.count(code) > 0;
    // Tonight's board runner is kept by build hash: the next nightly measures against it (a
    // first night's farm bench, without a baseline, does not print the hash: it is the file's).
    if (ok && step.name.rfind("board-verdict-", 0) == 0) {
      const std::string runner =
          state.board_runner[step.name.substr(std::string("board-verdict-").size())];
      if (!detail.contains("build_hash") && fs::exists(runner))
        detail["build_hash"] = k3bench::sha256_file(runner);
      if (detail.contains("build_hash"))
        k3reports::keep_runner(state.runners_dir, detail["build_hash"], runner);
    }
    state.details[step.name] = detail;
    state.exit_codes[step.name] = code;
    finish_step(*db, o.id, step.name, ok, code, line.wall_s, detail.dump());
    if (!ok) {
      failed = true;
      line.status = "FAILED";
      line.note = fmt::format("see {}/logs/{}.log", o.dir, step.name);
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
    fmt::print("[{}/{}] {}: {} in {:.1f} s (exit {}){}\n", i + 1, steps.size(), step.name,
               line.status, line.wall_s, code, line.note.empty() ? "" : "; " + line.note);
    std::fflush(stdout);
    lines.push_back(line);
  }
  if (state.host_hash.empty() && !failed) choose_baseline(rq, *db, o.id, state);
  std::string status;
  if (failed) {
    o.exit_code = 1;
    status = "failed";
    o.verdict = fmt::format("a step failed; continue with: k3tune nightly --resume {}", o.dir);
  } else if (verdict_code == 4) {
    o.exit_code = 4;
    status = "regression";
    o.verdict = fmt::format("REGRESSION against the previous nightly: {} (see summary.md)",
                            fmt::join(regressed, ", "));
  } else {
    o.exit_code = cells_failed || verdict_code == 3 ? 3 : 0;
    status = "ok";
    o.verdict = state.baseline_runner.empty()
                    ? fmt::format("no timing verdict ({})", state.baseline_note)
                    : "no timing regression against the previous nightly";
    std::vector<std::string> boards_judged;
    for (const auto& l : lines)
      if (l.name.rfind("board-judge-", 0) == 0 && l.status == "done")
        boards_judged.push_back(l.name.substr(std::string("board-judge-").size()));
    if (!boards_judged.empty())
      o.verdict += fmt::format(
          "; boards: no regression on {} (tonight's runner against the previous nightly's, "
          "on the board)",
          fmt::join(boards_judged, ", "));
    const auto judged = std::count_if(lines.begin(), lines.end(), [](const StepLine& l) {
      return l.name.rfind("count-verdict-", 0) == 0 && l.status == "done";
    });
    if (judged > 0)
      o.verdict += fmt::format("; instruction counts: no increase against nightly {}",
                               state.previous_counts_nightly);
    if (o.exit_code == 3) o.verdict += "; some cells failed or boards were quarantined";
  }
  finish_nightly(*db, o.id, status, o.exit_code, failed ? "" : state.host_hash,
                 state.details.value("verdict-bench", nlohmann::json::object())
                     .value("run_uuid", std::string()));
  o.wall_s = std::chrono::duration<double>(Clock::now() - start).count();
  const std::string text = summary_text(o, rq, lines, state);
  std::ofstream(o.dir + "/nightly.md") << text;
  // The report's summary.md gets the nightly's steps appended once (the verdict stays first).
  const std::string summary = o.dir + "/summary.md";
  if (fs::exists(summary) && !failed &&
      read_text(summary).find("\n# Nightly ") == std::string::npos)
    std::ofstream(summary, std::ios::app) << "\n" << text;
  // report.html too: the night's text (steps, per-board and count verdicts, table diffs) as a
  // section of the page, once.
  const std::string report_html = o.dir + "/report.html";
  if (fs::exists(report_html) && !failed) {
    std::string page = read_text(report_html);
    if (k3reports::add_text_section(page, "nightly", "The night", text))
      std::ofstream(report_html) << page;
  }
  // report.json covers the whole night too: its steps, each verdict step's outcome, the tables.
  const std::string report_json = o.dir + "/report.json";
  if (fs::exists(report_json) && !failed) {
    nlohmann::json report = nlohmann::json::parse(read_text(report_json), nullptr, false);
    if (report.is_object()) {
      nlohmann::json night = {
          {"id", o.id},           {"profile", rq.profile},    {"farm", rq.farm},
          {"verdict", o.verdict}, {"exit_code", o.exit_code}, {"wall_s", o.wall_s}};
      night["steps"] = nlohmann::json::array();
      for (const auto& l : lines)
        night["steps"].push_back({{"step", l.name},
                                  {"status", l.status},
                                  {"exit_code", l.exit_code},
                                  {"wall_s", l.wall_s},
                                  {"note", l.note}});
      for (const auto& l : lines) {
        const auto judged = [&](const std::string& prefix) {
          return l.name.rfind(prefix, 0) == 0 ? l.name.substr(prefix.size()) : std::string();
        };
        const nlohmann::json outcome = {{"status", l.status},
                                        {"verdict", l.status != "done" ? "not judged"
                                                    : l.exit_code == 4 ? "regression"
                                                    : l.exit_code == 3 ? "cells failed"
                                                                       : "ok"},
                                        {"note", l.note}};
        if (const auto board = judged("board-judge-"); !board.empty())
          night["boards"][board] = outcome;
        if (const auto path = judged("count-verdict-"); !path.empty()) {
          night["instruction_counts"][path] = outcome;
          night["instruction_counts"][path]["against"] = state.previous_counts_nightly;
        }
      }
      night["tables"] = nlohmann::json::array();
      if (fs::exists(o.dir + "/tables"))
        for (const auto& f : fs::directory_iterator(o.dir + "/tables"))
          if (f.path().extension() == ".json") night["tables"].push_back(f.path().string());
      report["nightly"] = night;
      std::ofstream(report_json) << report.dump(2) << "\n";
    }
  }
  return o;
}

}  // namespace k3nightly
