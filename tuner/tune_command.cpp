#include "tuner/tune_command.h"

#include <algorithm>
#include <chrono>
#include <ctime>
#include <exception>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "harness/common/params/param_spec.h"
#include "harness/host/bench/bench_session.h"
#include "harness/host/bench/catalog.h"
#include "harness/host/bench/provenance.h"
#include "harness/host/bench/sweep.h"
#include "harness/host/bench/user_error.h"
#include "harness/host/store/database.h"
#include "harness/host/store/results.h"
#include "harness/host/store/tuning_sessions.h"
#include "harness/host/store/tuning_tables.h"
#include "k3k/tuning.h"
#include "tuner/measurement_cache.h"
#include "tuner/seed_table.h"
#include "tuner/table.h"
#include "tuner/tune_setup.h"

namespace k3tuner {
namespace {

using k3bench::UserError;

struct InterruptedIfThrown {
  k3store::Connection* db;
  std::string run_uuid;
  int pending = std::uncaught_exceptions();
  ~InterruptedIfThrown() {
    if (db == nullptr || run_uuid.empty() || std::uncaught_exceptions() <= pending) return;
    try {
      k3store::mark_interrupted(*db, run_uuid);
    } catch (...) {  // the database is the problem: the exception in flight says more
    }
  }
};

std::string file_text(const std::string& path) {
  std::ifstream f(path);
  return std::string((std::istreambuf_iterator<char>(f)), {});
}

std::string timestamp() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y%m%d-%H%M%S", &tm);
  return buf;
}

nlohmann::json options_json(const StrategyOptions& o) {
  return {{"seed", o.seed},
          {"processes", o.processes},
          {"min_rounds", o.min_rounds},
          {"max_rounds", o.max_rounds},
          {"race_error", o.race_error},
          {"min_effect", o.min_effect},
          {"random_samples", o.random_samples},
          {"max_sweeps", o.max_sweeps},
          {"finalists", o.finalists}};
}

// The shape's integer values, the form shape classes and seed entries are matched in.
std::map<std::string, std::int64_t> integer_shape(const nlohmann::json& shape) {
  std::map<std::string, std::int64_t> m;
  for (const auto& [k, v] : shape.items())
    if (v.is_number_integer()) m[k] = v.get<std::int64_t>();
  return m;
}

// --suggest's candidates for `op`: every model's shapes (configs/models) and off-grid shapes around
// the measured ones.
std::vector<CandidateShape> candidate_shapes(const TuneCommand& c, const k3bench::Catalog& catalog,
                                             const std::string& op,
                                             const std::vector<TuneJobOutcome>& jobs) {
  std::vector<CandidateShape> out;
  auto add = [&](const std::map<std::string, std::int64_t>& shape, const std::string& origin) {
    out.push_back(
        {k3params::to_kv(nlohmann::json(shape)), k3k::rules::shape_class(op, shape), origin});
  };
  std::vector<std::filesystem::path> models;
  for (const auto& f : std::filesystem::directory_iterator(c.root + "/configs/models"))
    if (f.path().extension() == ".toml") models.push_back(f.path());
  std::sort(models.begin(), models.end());
  for (const auto& m : models) {
    TuneCommand one = c;
    one.model = m.stem().string();
    one.ops = {op};
    for (const auto& job : jobs_of(one, catalog))
      add(integer_shape(job.shape), "model " + one.model);
  }
  std::vector<std::map<std::string, std::int64_t>> measured;
  for (const auto& j : jobs)
    if (j.op == op && !j.session.empty()) measured.push_back(integer_shape(j.shape));
  for (const auto& shape : offgrid_candidates(measured)) add(shape, "off-grid");
  return out;
}

// What every job of one command is tuned with, once the command and the target are checked.
struct TuneContext {
  const TuneCommand& c;
  const k3targets::Target& target;
  const k3bench::Catalog& catalog;
  const TargetFacts& probed;  // the target's facts and fingerprint
  const Variables& facts;     // what the spaces see (one cpu when counting)
  const std::optional<TuneSeed>& seed;
  bool time;
  const std::string& build_hash;
};

TuneJobOutcome outcome_of(const TuneJob& job) {
  TuneJobOutcome o;
  o.op = job.op;
  o.role = job.role;
  o.shape = job.shape;
  return o;
}

// A job with a search space, ready to tune: the request, and the outcome so far (the
// configurations left out as emulated, the knobs a seed holds).
struct PlannedJob {
  TuneJobOutcome outcome;
  TuneRequest request;
};

PlannedJob plan_job(const TuneContext& x, const TuneJob& job, const SearchSpace& space) {
  const TuneCommand& c = x.c;
  PlannedJob p{outcome_of(job), {}};
  TuneJobOutcome& o = p.outcome;
  TuneRequest& r = p.request;
  o.space_file = space.file();
  r.space = &space;
  r.catalog = &x.catalog;
  r.shape = job.shape;
  r.fixed = k3bench::parse_kv(c.params, "--params");
  // Weight copies rotate past the last-level cache, which qemu does not model; counted, their
  // set-up is most of a process's instructions and one call's count is what is asked for.
  if (!x.time && r.fixed.count("copies") == 0 &&
      x.catalog.op(job.op, "--op").param("copies") != nullptr)
    r.fixed["copies"] = "1";
  r.settings = c.settings;
  r.facts = with_shape(x.facts, job.shape);
  r.flags = c.flags;
  r.strategy = c.strategy;
  r.options = c.options;
  r.budget = c.budget;
  r.progress = c.progress;
  r.stop_after = c.stop_after;
  // Emulated features: configurations using them are left out unless forced (a space over the
  // enumeration cap is refused by the search itself, and --explain only counts it).
  if (x.time && !c.force && space.product(r.facts) <= kMaxEnumerated) {
    for (const auto& cfg : space.enumerate(r.facts, r.flags))
      if (!space.emulated_knobs(cfg, r.facts).empty())
        o.excluded_emulated.push_back(config_key(cfg));
  }
  r.exclude.insert(o.excluded_emulated.begin(), o.excluded_emulated.end());
  if (x.seed) {
    o.seed = plan_seed(*x.seed->loaded, space, job.op, x.probed.best_path, integer_shape(job.shape),
                       x.seed->differing, r.facts);
    r.hold = o.seed.held;
  }
  return p;
}

// The session's id: a digest of everything that decides its measurements.
std::string session_of(const TuneContext& x, const TuneJob& job, const PlannedJob& p) {
  const TuneCommand& c = x.c;
  const nlohmann::json identity = {
      {"op", job.op},
      {"shape", job.shape},
      {"fixed", p.request.fixed},
      {"space", file_text(p.request.space->file())},
      {"strategy", c.strategy},
      {"options", options_json(c.options)},
      {"budget", c.budget},
      {"objective", c.objective},
      {"flags", c.flags},
      {"force", c.force},
      {"build", x.build_hash},
      {"settings", c.settings.to_json()},
      {"seed", x.seed ? nlohmann::json{{"table", x.seed->sha256}, {"held", p.outcome.seed.held}}
                      : nlohmann::json()},
      // Where it is measured, as its probe describes it, not by name: a session a lost farm board
      // left half done continues on any board of the same fingerprint (and emulator).
      {"target",
       {{"fingerprint", x.probed.fingerprint}, {"emulator", x.target.emulator_prefix()}}}};
  return k3bench::sha256_text(identity.dump()).substr(0, 32);
}

// The job tuned in its session: the stored measurements replayed, the missing ones taken and
// stored (with --replay only the stored ones, nothing written). Returns the job's table entry.
TableEntry tune_job(const TuneContext& x, const Measuring& m, const TuneJob& job, PlannedJob& p) {
  const TuneCommand& c = x.c;
  TuneJobOutcome& o = p.outcome;
  o.session = session_of(x, job, p);
  if (c.replay) {
    // No table is written from a replay; --heldout and --suggest read the entries.
    o.result = run_tuning(p.request, *m.objective, nullptr, o.session);
  } else {
    if (m.counter != nullptr) m.counter->session = o.session;
    k3store::TuningSessionRecord rec{
        o.session,        c.command_line, x.target.name(),
        x.build_hash,     m.run_uuid,     job.op,
        job.shape.dump(), c.model,        nlohmann::json{{"file", p.request.space->file()}}.dump(),
        c.strategy,       c.options.seed, c.budget,
        c.objective,      "running",      ""};
    const k3store::TuningSessionRecord existing = m.store->open(rec);
    o.resumed = existing.status == "finished" || !m.store->measurements(o.session).empty();
    o.result = run_tuning(p.request, *m.objective, m.store.get(), o.session);
    m.store->finish(o.session, o.result.to_json().dump(), o.result.point_records(job.op));
  }
  return {job.op,
          job.shape,
          o.session,
          nullptr,
          p.request.space,
          m.objective->unit(),
          o.result.cells.empty() ? "generic" : o.result.cells.front().settings.path};
}

// --heldout and --suggest: over the rules fitted on the tuned shapes, each shape's loss when it
// is left out, and the shapes whose measurement would most reduce the predicted loss.
void judge_shape_rules(const TuneCommand& c, const k3bench::Catalog& catalog,
                       std::vector<TableEntry>& entries, TuneOutcome& out) {
  std::size_t e = 0;
  for (auto& job : out.jobs)
    if (!job.session.empty()) entries[e++].result = &job.result;
  // "auto" is the target's best layer (what the table would name, without asking the store).
  for (auto& entry : entries)
    if (entry.path == "auto" && !out.facts.best_path.empty()) entry.path = out.facts.best_path;
  for (const auto& g : rule_groups(entries)) {
    if (c.heldout && g.shapes.size() >= kMinRuleShapes)
      out.heldout.push_back({g.op, g.path, held_out(g.shapes)});
    if (c.suggest > 0)
      out.suggestions.push_back(
          {g.op, g.path,
           suggest_shapes(g.shapes, candidate_shapes(c, catalog, g.op, out.jobs),
                          std::size_t(c.suggest))});
  }
}

// One entry per tuned job, with its result (in out.jobs, which no longer moves) and the path the
// runner took: "auto" resolves to the best layer of this target; counted measurements have no
// process rows: the runner's own facts say which layer that is.
void attach_results(k3store::Connection& db, std::vector<TableEntry>& entries, TuneOutcome& out) {
  std::size_t e = 0;
  for (auto& job : out.jobs) {
    if (job.session.empty()) continue;
    entries[e].result = &job.result;
    if (entries[e].path == "auto" && job.result.chosen != SIZE_MAX) {
      const auto path = k3store::session_process_path(db, job.session);
      entries[e].path =
          path ? *path : (out.facts.best_path.empty() ? "generic" : out.facts.best_path);
    }
    ++e;
  }
}

TableSource table_source(const TuneContext& x, const std::string& run_uuid) {
  const TuneCommand& c = x.c;
  return {c.objective,
          !x.time,
          c.force && (x.probed.emulated_target || x.probed.ime2_emulated),
          run_uuid.empty() ? std::vector<std::string>{} : std::vector<std::string>{run_uuid},
          c.command_line,
          x.target.name(),
          x.build_hash,
          x.target.name(),
          c.model};
}

// What the table was carried over from, and what of it was kept.
nlohmann::json seed_source(const std::string& path, const TuneSeed& seed,
                           const std::vector<TuneJobOutcome>& jobs) {
  nlohmann::json plans = nlohmann::json::object();
  for (const auto& j : jobs)
    if (!j.session.empty()) plans[j.session] = j.seed.to_json();
  std::vector<std::string> facts;
  for (const auto& [f, vars] : seed.differing) facts.push_back(f);
  return {{"path", path},
          {"sha256", seed.sha256},
          {"board", seed.table["board"]},
          {"differing_facts", facts},
          {"sessions", plans}};
}

// The table written to its file (--out, or results/tables/<target>-<model or op>-<time>.json)
// and stored with the sessions it was made from.
void store_table(const TuneContext& x, k3store::Connection& db, TuneOutcome& out) {
  const TuneCommand& c = x.c;
  out.table_path = !c.out.empty()
                       ? c.out
                       : fmt::format("{}/results/tables/{}-{}-{}.json", c.root, x.target.name(),
                                     c.model.empty() ? out.jobs.front().op : c.model, timestamp());
  std::filesystem::create_directories(std::filesystem::absolute(out.table_path).parent_path());
  const std::string text = out.table.dump(2) + "\n";
  {
    std::ofstream f(out.table_path);
    if (!(f << text)) throw UserError(fmt::format("{}: cannot write the table", out.table_path));
  }
  nlohmann::json sessions = nlohmann::json::array();
  for (const auto& j : out.jobs)
    if (!j.session.empty()) sessions.push_back(j.session);
  k3store::insert_tuning_table(
      db, {k3bench::sha256_text(text), "", sessions.dump(), out.table_path, text});
}

// The table of the tuned jobs, when there are any. A table the kernels would refuse is never
// written (out.table_problems says why); the sessions stay stored, so a re-run after the fix
// measures nothing again.
void write_table(const TuneContext& x, const Measuring& m, std::vector<TableEntry>& entries,
                 TuneOutcome& out) {
  attach_results(*m.db, entries, out);
  if (entries.empty()) return;
  out.table = make_table(out.facts, table_source(x, m.run_uuid), entries);
  if (x.seed) out.table["source"]["seed"] = seed_source(x.c.seed_table, *x.seed, out.jobs);
  out.table_problems =
      validate_table(out.table, x.c.root + "/configs/schema/tuning-table.schema.json").lines();
  if (!out.table_problems.empty()) return;
  store_table(x, *m.db, out);
}

}  // namespace

TuneOutcome run_tune(const k3targets::Target& target, const TuneCommand& command) {
  TuneOutcome out;
  const TuneCommand c = resolved_command(target, command);
  const k3bench::Catalog catalog = k3bench::Catalog::from_target(target);
  out.facts = probe_target(target);
  Variables facts = out.facts.facts;
  // --seed-table: another board's table, read and checked (the loader's form) before anything runs.
  const std::optional<TuneSeed> seed = read_seed(c.seed_table, out.facts.fingerprint);
  const bool time = c.objective == "time";
  if (time) refuse_emulated_timing(c, target, out.facts);
  const std::string plugin = counting_plugin(c, target, time);
  // Counts are exact with one worker only (more would add spinning threads).
  if (!time) facts["cpus"] = 1;
  const auto jobs = jobs_of(c, catalog);
  const std::string build_hash = k3bench::sha256_file(target.runner_path());

  // Everything validated that can be without measuring: spaces, flags, objective. From here on
  // the database is written (unless --explain).
  const std::vector<SearchSpace> spaces = load_spaces(c, catalog, facts, jobs, target, time);
  const Measuring m = open_measuring(c, target, build_hash, time, plugin);
  const TuneContext x{c, target, catalog, out.facts, facts, seed, time, build_hash};

  // A run cut short (a farm board lost mid-tune) says so, as a killed sweep's does.
  const InterruptedIfThrown cut_short{m.db.get(), m.run_uuid};
  std::vector<TableEntry> entries;
  for (std::size_t j = 0; j < jobs.size(); ++j) {
    if (spaces[j].op().empty()) {
      TuneJobOutcome o = outcome_of(jobs[j]);
      o.note = fmt::format("no search space for op {} ({}/{}.toml)", jobs[j].op,
                           c.spaces_dir.empty() ? "configs/spaces" : c.spaces_dir, jobs[j].op);
      out.jobs.push_back(std::move(o));
      continue;
    }
    PlannedJob p = plan_job(x, jobs[j], spaces[j]);
    if (c.explain)  // the product alone over the cap
      p.outcome.result.counts = spaces[j].count(p.request.facts, p.request.flags);
    else
      entries.push_back(tune_job(x, m, jobs[j], p));
    out.jobs.push_back(std::move(p.outcome));
  }
  if ((c.heldout || c.suggest > 0) && !c.explain) {
    judge_shape_rules(c, catalog, entries, out);
    return out;
  }
  if (c.explain || c.replay || m.db == nullptr) return out;
  if (time) k3store::finish_run(*m.db, m.run_uuid, 0, 0, 0);
  if (c.write_table) write_table(x, m, entries, out);
  return out;
}

nlohmann::json SuggestGroup::to_json() const {
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& s : shapes)
    rows.push_back({{"shape", s.shape.label},
                    {"origin", s.shape.origin},
                    {"predicted_loss", s.predicted_loss},
                    {"nearest_measured", s.nearest},
                    {"distance_log2", s.distance}});
  return {{"op", op}, {"path", path}, {"shapes", rows}};
}

nlohmann::json HeldOutGroup::to_json() const {
  nlohmann::json rows = nlohmann::json::array();
  double sum[3] = {0, 0, 0}, worst[3] = {0, 0, 0};
  for (const auto& s : shapes) {
    const double v[3] = {s.rule, s.nearest, s.defaults};
    for (int i = 0; i < 3; ++i) {
      sum[i] += v[i];
      worst[i] = std::max(worst[i], v[i]);
    }
    rows.push_back(
        {{"shape", s.label}, {"rule", s.rule}, {"nearest", s.nearest}, {"defaults", s.defaults}});
  }
  const double n = shapes.empty() ? 1.0 : double(shapes.size());
  return {{"op", op},
          {"path", path},
          {"shapes", rows},
          {"mean", {{"rule", sum[0] / n}, {"nearest", sum[1] / n}, {"defaults", sum[2] / n}}},
          {"worst", {{"rule", worst[0]}, {"nearest", worst[1]}, {"defaults", worst[2]}}}};
}

}  // namespace k3tuner
