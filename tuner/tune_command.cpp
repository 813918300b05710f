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

namespace k3tuner {
namespace {

using k3bench::UserError;

struct Job {
  std::string op, role;
  nlohmann::json shape;
};

std::vector<Job> jobs_of(const TuneCommand& c, const k3bench::Catalog& catalog) {
  std::vector<Job> jobs;
  if (!c.model.empty()) {
    k3bench::GridRequest g;
    g.model = c.model;
    g.ops = c.ops;
    k3bench::MeasureSettings s;
    k3bench::ProcessPlan plan;
    for (const auto& cell : k3bench::expand_grid(g, catalog, c.root + "/configs/models", s, plan))
      jobs.push_back({cell.op, cell.role, cell.shape});
    return jobs;
  }
  if (c.ops.empty() || c.shapes.empty())
    throw UserError("tune: give --model NAME, or --op OP with --shape k=v,...");
  for (const auto& op : c.ops) {
    const k3bench::OpSpec& spec = catalog.op(op, "--op");
    for (const auto& sh : c.shapes)
      jobs.push_back(
          {op, "", catalog.normalise(spec, k3bench::parse_kv(sh, "--shape"), true, "--shape")});
  }
  return jobs;
}

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

// --suggest's candidates for `op`: every model's shapes (configs/models) and off-grid shapes around
// the measured ones.
std::vector<CandidateShape> candidate_shapes(const TuneCommand& c, const k3bench::Catalog& catalog,
                                             const std::string& op,
                                             const std::vector<TuneJobOutcome>& jobs) {
  std::vector<CandidateShape> out;
  auto integers = [](const nlohmann::json& shape) {
    std::map<std::string, std::int64_t> m;
    for (const auto& [k, v] : shape.items())
      if (v.is_number_integer()) m[k] = v.get<std::int64_t>();
    return m;
  };
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
    for (const auto& job : jobs_of(one, catalog)) add(integers(job.shape), "model " + one.model);
  }
  std::vector<std::map<std::string, std::int64_t>> measured;
  for (const auto& j : jobs)
    if (j.op == op && !j.session.empty()) measured.push_back(integers(j.shape));
  for (const auto& shape : offgrid_candidates(measured)) add(shape, "off-grid");
  return out;
}

// --seed-table: another board's table, read and checked (the loader's form) before anything runs.
struct Seed {
  nlohmann::json table;
  std::shared_ptr<const k3k::TuningTable> loaded;  // parsed once, for every job's plan
  std::string sha256;
  std::map<std::string, std::set<std::string>> differing;
};

std::optional<Seed> read_seed(const std::string& path, const nlohmann::json& fingerprint) {
  if (path.empty()) return std::nullopt;
  Seed s;
  s.table = read_table(path);
  s.sha256 = k3bench::sha256_text(s.table.dump());
  std::string problem;
  if (!s.table.contains("board") || !s.table["board"].contains("fingerprint"))
    throw UserError(fmt::format("--seed-table {}: board.fingerprint: missing", path));
  s.loaded = k3k::TuningTable::parse(s.table.dump(), nullptr, problem);
  if (s.loaded == nullptr) throw UserError(fmt::format("--seed-table {}: {}", path, problem));
  s.differing = differing_facts(s.table["board"]["fingerprint"], fingerprint);
  return s;
}

// Each job's search space (an empty one where its op has none), checked against the runner's
// catalog and, for a time objective, against the places where timing it means something; refused
// when no job has one.
std::vector<SearchSpace> load_spaces(const TuneCommand& c, const k3bench::Catalog& catalog,
                                     const Variables& facts, const std::vector<Job>& jobs,
                                     const k3targets::Target& target, bool time) {
  std::vector<SearchSpace> spaces;
  for (const auto& job : jobs) {
    const std::string file =
        (c.spaces_dir.empty() ? c.root + "/configs/spaces" : c.spaces_dir) + "/" + job.op + ".toml";
    if (!std::filesystem::exists(file)) {
      spaces.emplace_back();
      continue;
    }
    SearchSpace space = SearchSpace::load(file);
    space.check(catalog.op(job.op, file), with_shape(facts, job.shape));
    // Where a time objective means something, by the kind of place: local, ssh (a board), qemu.
    const std::string kind =
        target.emulated() ? "qemu" : k3targets::to_string(target.config().kind);
    const auto& where = space.meaningful_on();
    if (time && !c.force && !where.empty() &&
        std::find(where.begin(), where.end(), kind) == where.end())
      throw UserError(fmt::format(
          "{}: meaningful_on = [{}]: a time objective on {} ({}) says nothing (--force to "
          "time it anyway)",
          file, fmt::join(where, ", "), target.name(), kind));
    spaces.push_back(std::move(space));
  }
  if (std::all_of(spaces.begin(), spaces.end(),
                  [](const SearchSpace& s) { return s.op().empty(); })) {
    std::set<std::string> ops;
    for (const auto& job : jobs) ops.insert(job.op);
    throw UserError(fmt::format("{}: no search space for any of its ops ({}) in {}",
                                c.model.empty() ? "--op" : "--model " + c.model,
                                fmt::join(ops, ", "),
                                c.spaces_dir.empty() ? "configs/spaces" : c.spaces_dir));
  }
  return spaces;
}

// Where the tuning's measurements go and come from: nothing for --explain; the stored ones alone
// for --replay (read-only); otherwise the database opened for writing, its session store and
// measurement cache, and the objective (a timed run, or exact counts under qemu-user).
struct Measuring {
  std::unique_ptr<k3store::Connection> db;
  std::unique_ptr<k3store::TuningSessionStore> store;
  std::unique_ptr<MeasurementCache> cache;
  std::unique_ptr<Objective> objective;
  std::string run_uuid;                     // the timed run ("" : counted or not measured)
  InstructionObjective* counter = nullptr;  // the counting objective, when it is one
};

Measuring open_measuring(const TuneCommand& c, const k3targets::Target& target,
                         const std::string& build_hash, bool time, const std::string& plugin) {
  Measuring m;
  auto& db = m.db;
  auto& store = m.store;
  auto& cache = m.cache;
  auto& objective = m.objective;
  auto& run_uuid = m.run_uuid;
  auto& counter = m.counter;
  if (c.replay && !c.explain) {
    // Nothing is run and nothing is written: the strategy meets the measurements already stored.
    if (!std::filesystem::exists(c.db_path))
      throw UserError(fmt::format("--replay: {}: no database to replay from", c.db_path));
    db = k3store::open_database(c.db_path, k3store::OpenMode::kReadOnly);
    cache = std::make_unique<MeasurementCache>(*db);
    if (time) {
      objective = std::make_unique<ReplayTimeObjective>(target, build_hash, *db);
    } else {
      auto counting = std::make_unique<InstructionObjective>(target, plugin);
      counting->use_cache(cache.get(), build_hash, true);
      objective = std::move(counting);
    }
  } else if (!c.explain) {
    db = k3store::open_for_writing(c.db_path);
    if (!k3store::find_build(*db, build_hash))
      k3store::upsert_build(*db, k3bench::build_from_runner(target, build_hash));
    store = std::make_unique<k3store::TuningSessionStore>(*db);
    cache = std::make_unique<MeasurementCache>(*db);
    if (time) {
      run_uuid = k3bench::new_uuid();
      k3store::insert_run(*db, {run_uuid, c.command_line, target.name(), build_hash, "", "[]", 0, 0,
                                0, nlohmann::json{{"tuning", c.strategy}}.dump()});
      objective = std::make_unique<TimeObjective>(target, build_hash, *db, run_uuid,
                                                  target.config().timeout_s);
    } else {
      auto counting = std::make_unique<InstructionObjective>(target, plugin);
      counting->use_cache(cache.get(), build_hash);
      counter = counting.get();
      objective = std::move(counting);
    }
  }

  return m;
}

}  // namespace

TuneOutcome run_tune(const k3targets::Target& target, const TuneCommand& command) {
  TuneOutcome out;
  if (command.objective != "time" && command.objective != "instructions" &&
      command.objective != "auto")
    throw UserError(
        fmt::format("--objective: '{}' is not time, instructions or auto", command.objective));
  // auto: exact counts where the runner is emulated (qemu-user), time where it runs natively; so
  // one campaign over a mixed farm tunes each board the way that means something there.
  TuneCommand c = command;
  if (c.objective == "auto") c.objective = target.emulated() ? "instructions" : "time";
  if (std::find(strategy_names().begin(), strategy_names().end(), c.strategy) ==
      strategy_names().end())
    throw UserError(fmt::format(
        "--strategy: '{}' is not one of exhaustive, random, racing, coordinate", c.strategy));
  const auto refuse_emulated_time = [&] {
    throw UserError(
        fmt::format("target {} runs under qemu-user: its wall time says nothing about a board. "
                    "Tune with --objective instructions (a deterministic proxy), or --force to "
                    "time it anyway (the table is then labelled)",
                    target.name()));
  };
  // Refused before the target is even probed: its kind alone decides.
  if (c.objective == "time" && target.emulated() && !c.force) refuse_emulated_time();
  const k3bench::Catalog catalog = k3bench::Catalog::from_target(target);
  out.facts = probe_target(target);
  Variables facts = out.facts.facts;
  // --seed-table: another board's table, read and checked (the loader's form) before anything runs.
  const std::optional<Seed> seed = read_seed(c.seed_table, out.facts.fingerprint);
  const bool time = c.objective == "time";
  if (time && out.facts.emulated_target && !c.force) refuse_emulated_time();
  if (time && out.facts.ime2_emulated && !c.force) {
    throw UserError(fmt::format(
        "target {}: the IME2 layer is emulated in software there; timing it says nothing "
        "(--force to time it anyway)",
        target.name()));
  }
  std::string plugin =
      c.plugin.empty() ? c.root + "/build/third_party/qemu-plugin/libinsn_count.so" : c.plugin;
  if (!time) {
    if (!target.emulated())
      throw UserError(
          fmt::format("--objective instructions counts under qemu-user: {} runs natively (a qemu "
                      "target, or a farm board whose exec prefix is qemu-user, counts)",
                      target.name()));
    if (!std::filesystem::exists(plugin))
      throw UserError(
          fmt::format("--objective instructions: the counting plugin {} is missing (bash "
                      "scripts/count-instructions.sh builds it)",
                      plugin));
    facts["cpus"] = 1;  // counts are exact with one worker only (more would add spinning threads)
  }
  const auto jobs = jobs_of(c, catalog);
  const std::string build_hash = k3bench::sha256_file(target.runner_path());

  // Everything validated that can be without measuring: spaces, flags, objective. From here on
  // the database is written (unless --explain).
  const std::vector<SearchSpace> spaces = load_spaces(c, catalog, facts, jobs, target, time);
  Measuring m = open_measuring(c, target, build_hash, time, plugin);
  std::unique_ptr<k3store::Connection>& db = m.db;
  std::unique_ptr<k3store::TuningSessionStore>& store = m.store;
  std::unique_ptr<Objective>& objective = m.objective;
  const std::string& run_uuid = m.run_uuid;
  InstructionObjective* counter = m.counter;

  // A run cut short (a farm board lost mid-tune) says so, as a killed sweep's does.
  const InterruptedIfThrown cut_short{db.get(), run_uuid};
  std::vector<TableEntry> entries;
  bool forced_emulated = c.force && (out.facts.emulated_target || out.facts.ime2_emulated);
  for (std::size_t j = 0; j < jobs.size(); ++j) {
    const Job& job = jobs[j];
    TuneJobOutcome o;
    o.op = job.op;
    o.role = job.role;
    o.shape = job.shape;
    if (spaces[j].op().empty()) {
      o.note = fmt::format("no search space for op {} ({}/{}.toml)", job.op,
                           c.spaces_dir.empty() ? "configs/spaces" : c.spaces_dir, job.op);
      out.jobs.push_back(std::move(o));
      continue;
    }
    const SearchSpace& space = spaces[j];
    o.space_file = space.file();
    TuneRequest r;
    r.space = &space;
    r.catalog = &catalog;
    r.shape = job.shape;
    r.fixed = k3bench::parse_kv(c.params, "--params");
    // Weight copies rotate past the last-level cache, which qemu does not model; counted, their
    // set-up is most of a process's instructions and one call's count is what is asked for.
    if (!time && r.fixed.count("copies") == 0 &&
        catalog.op(job.op, "--op").param("copies") != nullptr)
      r.fixed["copies"] = "1";
    r.settings = c.settings;
    r.facts = with_shape(facts, job.shape);
    r.flags = c.flags;
    r.strategy = c.strategy;
    r.options = c.options;
    r.budget = c.budget;
    r.progress = c.progress;
    r.stop_after = c.stop_after;
    // Emulated features: configurations using them are left out unless forced (a space over the
    // enumeration cap is refused by the search itself, and --explain only counts it).
    if (time && !c.force && space.product(r.facts) <= kMaxEnumerated) {
      for (const auto& cfg : space.enumerate(r.facts, r.flags))
        if (!space.emulated_knobs(cfg, r.facts).empty())
          o.excluded_emulated.push_back(config_key(cfg));
    }
    r.exclude.insert(o.excluded_emulated.begin(), o.excluded_emulated.end());
    if (seed) {
      std::map<std::string, std::int64_t> shape;
      for (const auto& [k, v] : job.shape.items())
        if (v.is_number_integer()) shape[k] = v.get<std::int64_t>();
      o.seed = plan_seed(*seed->loaded, space, job.op, out.facts.best_path, shape, seed->differing,
                         r.facts);
      r.hold = o.seed.held;
    }
    if (c.explain) {
      o.result.counts = space.count(r.facts, r.flags);  // the product alone over the cap
      out.jobs.push_back(std::move(o));
      continue;
    }
    const nlohmann::json identity = {
        {"op", job.op},
        {"shape", job.shape},
        {"fixed", r.fixed},
        {"space", file_text(space.file())},
        {"strategy", c.strategy},
        {"options", options_json(c.options)},
        {"budget", c.budget},
        {"objective", c.objective},
        {"flags", c.flags},
        {"force", c.force},
        {"build", build_hash},
        {"settings", c.settings.to_json()},
        {"seed",
         seed ? nlohmann::json{{"table", seed->sha256}, {"held", o.seed.held}} : nlohmann::json()},
        // Where it is measured, as its probe describes it, not by name: a session a lost farm board
        // left half done continues on any board of the same fingerprint (and emulator).
        {"target",
         {{"fingerprint", out.facts.fingerprint}, {"emulator", target.emulator_prefix()}}}};
    o.session = k3bench::sha256_text(identity.dump()).substr(0, 32);
    if (c.replay) {
      o.result = run_tuning(r, *objective, nullptr, o.session);
      // No table is written from a replay; --heldout and --suggest read the entries.
      entries.push_back(
          {job.op, job.shape, o.session, nullptr, &space, objective->unit(),
           o.result.cells.empty() ? "generic" : o.result.cells.front().settings.path});
      out.jobs.push_back(std::move(o));
      continue;
    }
    if (counter != nullptr) counter->session = o.session;
    k3store::TuningSessionRecord rec{
        o.session,        c.command_line, target.name(),
        build_hash,       run_uuid,       job.op,
        job.shape.dump(), c.model,        nlohmann::json{{"file", space.file()}}.dump(),
        c.strategy,       c.options.seed, c.budget,
        c.objective,      "running",      ""};
    const k3store::TuningSessionRecord existing = store->open(rec);
    o.resumed = existing.status == "finished" || !store->measurements(o.session).empty();
    o.result = run_tuning(r, *objective, store.get(), o.session);
    store->finish(o.session, o.result.to_json().dump(), o.result.point_records(job.op));
    entries.push_back({job.op, job.shape, o.session, nullptr, &space, objective->unit(),
                       o.result.cells.empty() ? "generic" : o.result.cells.front().settings.path});
    out.jobs.push_back(std::move(o));
  }
  if ((c.heldout || c.suggest > 0) && !c.explain) {
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
    return out;
  }
  if (c.explain || c.replay || db == nullptr) return out;
  if (time) k3store::finish_run(*db, run_uuid, 0, 0, 0);
  if (!c.write_table) return out;
  // The table: one entry per tuned job (results are in out.jobs, which no longer moves).
  std::size_t e = 0;
  for (auto& job : out.jobs) {
    if (job.session.empty()) continue;
    entries[e].result = &job.result;
    // The path the runner took ("auto" resolves to the best layer of this target; counted
    // measurements have no process rows: the runner's own facts say which layer that is).
    if (entries[e].path == "auto" && job.result.chosen != SIZE_MAX) {
      const auto path = k3store::session_process_path(*db, job.session);
      entries[e].path =
          path ? *path : (out.facts.best_path.empty() ? "generic" : out.facts.best_path);
    }
    ++e;
  }
  if (entries.empty()) return out;
  TableSource src{
      c.objective,
      !time,
      forced_emulated,
      run_uuid.empty() ? std::vector<std::string>{} : std::vector<std::string>{run_uuid},
      c.command_line,
      target.name(),
      build_hash,
      target.name(),
      c.model};
  out.table = make_table(out.facts, src, entries);
  if (seed) {  // what the table was carried over from, and what of it was kept
    nlohmann::json plans = nlohmann::json::object();
    for (const auto& j : out.jobs)
      if (!j.session.empty()) plans[j.session] = j.seed.to_json();
    std::vector<std::string> facts;
    for (const auto& [f, vars] : seed->differing) facts.push_back(f);
    out.table["source"]["seed"] = {{"path", c.seed_table},
                                   {"sha256", seed->sha256},
                                   {"board", seed->table["board"]},
                                   {"differing_facts", facts},
                                   {"sessions", plans}};
  }
  out.table_problems =
      validate_table(out.table, c.root + "/configs/schema/tuning-table.schema.json").lines();
  // A table the kernels would refuse is never written; the sessions stay stored, so a re-run after
  // the fix measures nothing again.
  if (!out.table_problems.empty()) return out;
  out.table_path = !c.out.empty()
                       ? c.out
                       : fmt::format("{}/results/tables/{}-{}-{}.json", c.root, target.name(),
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
      *db, {k3bench::sha256_text(text), "", sessions.dump(), out.table_path, text});
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
