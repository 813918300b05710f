#include "tuner/tune_setup.h"

#include <algorithm>
#include <filesystem>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "harness/common/params/param_spec.h"
#include "harness/host/bench/bench_session.h"
#include "harness/host/bench/provenance.h"
#include "harness/host/bench/sweep.h"
#include "harness/host/bench/user_error.h"
#include "harness/host/store/database.h"
#include "harness/host/store/results.h"
#include "k3k/tuning.h"
#include "tuner/seed_table.h"
#include "tuner/strategy.h"
#include "tuner/table.h"

namespace k3tuner {
namespace {

using k3bench::UserError;

[[noreturn]] void refuse_emulated_time(const k3targets::Target& target) {
  throw UserError(
      fmt::format("target {} runs under qemu-user: its wall time says nothing about a board. "
                  "Tune with --objective instructions (a deterministic proxy), or --force to "
                  "time it anyway (the table is then labelled)",
                  target.name()));
}

}  // namespace

TuneCommand resolved_command(const k3targets::Target& target, const TuneCommand& command) {
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
  // Refused before the target is even probed: its kind alone decides.
  if (c.objective == "time" && target.emulated() && !c.force) refuse_emulated_time(target);
  return c;
}

void refuse_emulated_timing(const TuneCommand& c, const k3targets::Target& target,
                            const TargetFacts& facts) {
  if (facts.emulated_target && !c.force) refuse_emulated_time(target);
  if (facts.ime2_emulated && !c.force) {
    throw UserError(fmt::format(
        "target {}: the IME2 layer is emulated in software there; timing it says nothing "
        "(--force to time it anyway)",
        target.name()));
  }
}

std::string counting_plugin(const TuneCommand& c, const k3targets::Target& target, bool time) {
  std::string plugin =
      c.plugin.empty() ? c.root + "/build/third_party/qemu-plugin/libinsn_count.so" : c.plugin;
  if (time) return plugin;
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
  return plugin;
}

std::vector<TuneJob> jobs_of(const TuneCommand& c, const k3bench::Catalog& catalog) {
  std::vector<TuneJob> jobs;
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

std::optional<TuneSeed> read_seed(const std::string& path, const nlohmann::json& fingerprint) {
  if (path.empty()) return std::nullopt;
  TuneSeed s;
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

std::vector<SearchSpace> load_spaces(const TuneCommand& c, const k3bench::Catalog& catalog,
                                     const Variables& facts, const std::vector<TuneJob>& jobs,
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

Measuring open_measuring(const TuneCommand& c, const k3targets::Target& target,
                         const std::string& build_hash, bool time, const std::string& plugin) {
  Measuring m;
  if (c.replay && !c.explain) {
    // Nothing is run and nothing is written: the strategy meets the measurements already stored.
    if (!std::filesystem::exists(c.db_path))
      throw UserError(fmt::format("--replay: {}: no database to replay from", c.db_path));
    m.db = k3store::open_database(c.db_path, k3store::OpenMode::kReadOnly);
    m.cache = std::make_unique<MeasurementCache>(*m.db);
    if (time) {
      m.objective = std::make_unique<ReplayTimeObjective>(target, build_hash, *m.db);
    } else {
      auto counting = std::make_unique<InstructionObjective>(target, plugin);
      counting->use_cache(m.cache.get(), build_hash, true);
      m.objective = std::move(counting);
    }
  } else if (!c.explain) {
    m.db = k3store::open_for_writing(c.db_path);
    if (!k3store::find_build(*m.db, build_hash))
      k3store::upsert_build(*m.db, k3bench::build_from_runner(target, build_hash));
    m.store = std::make_unique<k3store::TuningSessionStore>(*m.db);
    m.cache = std::make_unique<MeasurementCache>(*m.db);
    if (time) {
      m.run_uuid = k3bench::new_uuid();
      k3store::insert_run(*m.db, {m.run_uuid, c.command_line, target.name(), build_hash, "", "[]",
                                  0, 0, 0, nlohmann::json{{"tuning", c.strategy}}.dump()});
      m.objective = std::make_unique<TimeObjective>(target, build_hash, *m.db, m.run_uuid,
                                                    target.config().timeout_s);
    } else {
      auto counting = std::make_unique<InstructionObjective>(target, plugin);
      counting->use_cache(m.cache.get(), build_hash);
      m.counter = counting.get();
      m.objective = std::move(counting);
    }
  }
  return m;
}

}  // namespace k3tuner
