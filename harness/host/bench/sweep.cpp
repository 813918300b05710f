#include "harness/host/bench/sweep.h"

#include "harness/host/stats/round_pairs.h"

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <map>
#include <optional>
#include <random>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "harness/host/bench/progress.h"
#include "harness/host/bench/provenance.h"

namespace k3bench {
namespace {

using Clock = std::chrono::steady_clock;

// Test hook: after N committed runner processes, the next runner is SIGKILLed mid-measurement and
// k3tune then SIGKILLs itself -- an abrupt death (no cleanup, no destructors) like a board reset.
std::optional<int> kill_after_from_env() {
  const char* v = std::getenv("K3TUNE_TEST_KILL_AFTER");
  if (v == nullptr || *v == '\0') return std::nullopt;
  return std::atoi(v);
}

std::string hostname() {
  char host[256] = {};
  gethostname(host, sizeof(host) - 1);
  return host;
}

// One measured unit: a cell on one build, and the processes that count for it.
struct Unit {
  std::vector<k3store::ProcessRef> refs;  // successful processes (adopted first), in order
  std::vector<bool> disturbed;            // per ref
  std::int64_t iterations = 0;            // calls per repetition, from the first process
  std::string failure;
  bool aggregated = false;
};

}  // namespace

int SweepReport::failed_cells() const {
  int n = 0;
  for (const auto& c : cells) n += c.has_aggregate && !c.aggregate.ok;
  return n;
}

std::string new_uuid() {
  std::random_device rd;
  std::uniform_int_distribution<unsigned> byte(0, 255);
  unsigned char b[16];
  for (auto& x : b) x = static_cast<unsigned char>(byte(rd));
  b[6] = (b[6] & 0x0F) | 0x40;  // version 4
  b[8] = (b[8] & 0x3F) | 0x80;  // RFC 4122 variant
  std::string s;
  for (int i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) s += '-';
    s += fmt::format("{:02x}", b[i]);
  }
  return s;
}

std::string cell_key(const k3targets::Target& target, const CellSpec& cell,
                     const std::string& build_hash) {
  const auto& tc = target.config();
  const nlohmann::json identity = {
      {"target",
       {{"name", tc.name},
        {"kind", k3targets::to_string(tc.kind)},
        {"vlen", tc.kind == k3targets::TargetKind::kQemu ? tc.vlen : 0}}},
      {"op", cell.op},
      {"shape", cell.shape},
      {"params", cell.params},
      {"build", build_hash},
      {"measure", cell.settings.to_json()}};
  return sha256_text(identity.dump());  // nlohmann::json objects are key-sorted: canonical
}

k3store::AggregateRecord aggregate_of(const std::vector<std::vector<double>>& per_process,
                                      const k3stats::CellSummaryOptions& opt) {
  const auto s = k3stats::summarize_cell(per_process, opt);
  k3store::AggregateRecord a;
  a.ok = true;
  a.processes = static_cast<int>(s.processes);
  a.samples = static_cast<int>(s.samples);
  a.mean_ns = s.mean;
  if (std::isfinite(s.ci.half_width)) {
    a.ci_low_ns = s.ci.low;
    a.ci_high_ns = s.ci.high;
    a.ci_rel_half_width = s.ci.rel_half_width;
  }
  a.cv_between = s.cv_between;
  a.cv_all = s.cv_all;
  a.min_ns = s.min;
  a.median_ns = s.median;
  a.outliers = static_cast<int>(s.outliers);
  a.wide_ci = s.wide_ci;
  a.method = s.method;
  return a;
}

std::pair<std::vector<double>, std::vector<double>> paired_means(const CellOutcome& a,
                                                                 const CellOutcome& b) {
  auto pairs =
      k3stats::pair_by_round(a.process_rounds, a.process_means, b.process_rounds, b.process_means);
  return {std::move(pairs.a), std::move(pairs.b)};
}

std::string busy_machine_line(int processes_run, int processes_disturbed,
                              const std::set<std::string>& flags) {
  if (processes_disturbed <= kDisturbedNotes || 2 * processes_disturbed < processes_run) return {};
  return fmt::format(
      "k3tune: note: the machine was busy: {} of {} runner processes were disturbed ({}); the "
      "figures rest on the undisturbed ones (or, where none was, on all of them: see each cell's "
      "notes); measure again on a quieter machine for tighter figures",
      processes_disturbed, processes_run, fmt::join(flags, ", "));
}

namespace {

// Units: cell-major, build-minor, so a round alternates the builds of each cell (A B A B ...).
// Fills `outcomes` with one per unit and returns each unit's group for the round planner: with
// pair_tables, the cells that differ only in their table share the group of the first of them.
std::vector<std::size_t> lay_out_units(const std::vector<SweepBuild>& builds,
                                       const std::vector<CellSpec>& cells, const SweepOptions& opt,
                                       std::vector<CellOutcome>& outcomes) {
  std::vector<std::size_t> group_of;
  std::map<std::string, std::size_t> group_of_tableless;  // pair_tables: key without the table
  for (std::size_t ci = 0; ci < cells.size(); ++ci) {
    std::size_t group = ci;
    if (opt.pair_tables) {
      CellSpec tableless = cells[ci];
      tableless.settings.table.clear();
      tableless.settings.table_sha256.clear();
      group = group_of_tableless
                  .emplace(cell_key(*builds[0].target, tableless, builds[0].build_hash), ci)
                  .first->second;
    }
    for (std::size_t bi = 0; bi < builds.size(); ++bi) {
      CellOutcome c;
      c.spec = cells[ci];
      c.build = bi;
      c.cell_key = cell_key(*builds[bi].target, cells[ci], builds[bi].build_hash);
      outcomes.push_back(std::move(c));
      group_of.push_back(group);
    }
  }
  return group_of;
}

// The run's settings as runs.settings_json keeps them: the process budget and the builds.
nlohmann::json sweep_settings_json(const std::vector<SweepBuild>& builds, const SweepOptions& opt) {
  nlohmann::json builds_json = nlohmann::json::array();
  for (const auto& b : builds)
    builds_json.push_back(
        {{"build_hash", b.build_hash}, {"label", b.label}, {"target", b.target->name()}});
  nlohmann::json settings = {{"min_processes", opt.rounds.min_processes},
                             {"max_processes", opt.rounds.max_processes},
                             {"target_ci", opt.rounds.target_ci},
                             {"target_mde", opt.rounds.target_mde},
                             {"wall_budget_s", opt.wall_budget_s},
                             {"remeasure_disturbed", opt.rounds.remeasure_disturbed},
                             {"builds", builds_json}};
  if (builds.size() == 2) settings["build_pairing"] = opt.build_pairing.to_json();
  return settings;
}

// One sweep under way: the report it fills, each unit's counted processes and the round planner,
// which its steps share, and the steps themselves in the order run_sweep takes them.
class Sweep {
 public:
  Sweep(k3store::DatabaseAccess& db, const std::vector<SweepBuild>& builds,
        const std::vector<CellSpec>& cells, const SweepOptions& opt, ProcessExecutor& exec)
      : db_(db),
        builds_(builds),
        opt_(opt),
        exec_(exec),
        // Two builds in one process: units are cell-major, build-minor, so a cell's baseline is
        // u - 1.
        within_(opt.build_pairing.within() && builds.size() == 2),
        // report_ is declared before planner_: its cells are laid out before the planner is made.
        planner_(lay_out_units(builds, cells, opt, report_.cells), opt.rounds),
        units_(report_.cells.size()) {
    report_.run_uuid = opt.run_uuid.empty() ? new_uuid() : opt.run_uuid;
  }

  // --resume: units measured by an earlier run are skipped, and the processes of interrupted runs
  // adopted. Returns the cell keys of the units in order (runs.order_json); `interrupted` gets the
  // runs whose processes were adopted.
  nlohmann::json adopt_earlier_processes(std::set<std::string>& interrupted);
  // The run, its cells, and the interrupted runs marked as such: one transaction.
  void write_run(const std::vector<CellSpec>& cells, const nlohmann::json& order,
                 const std::set<std::string>& interrupted);
  // The aggregate of every unit the planner has ended and nothing has aggregated yet.
  void write_finished();
  // The rounds until the planner ends every unit (or the wall-time budget runs out).
  void measure_rounds();
  // The disturbances summed up and the run's totals written: the report is complete.
  SweepReport finish();

 private:
  bool wall_budget_spent() const;
  void measure_process(std::size_t u);
  void show_progress(const CellOutcome& c, const SweepBuild& build, int process_index);
  CellSpec process_spec(const CellOutcome& c) const;
  void die_mid_measurement(const SweepBuild& build, const CellSpec& spec, double timeout_s,
                           const Unit& unit);
  void add_process_times(const ProcessOutcome& o);
  void record(std::size_t u, int process_index, const ProcessOutcome& o);
  void tell(const CellOutcome& c, int process_index, const ProcessOutcome& o);
  void write_aggregate(std::size_t u);

  k3store::DatabaseAccess& db_;
  const std::vector<SweepBuild>& builds_;
  const SweepOptions& opt_;
  ProcessExecutor& exec_;
  const bool within_;
  const Clock::time_point start_ = Clock::now();
  const std::optional<int> kill_after_ = kill_after_from_env();
  SweepReport report_;
  RoundPlanner planner_;
  std::vector<Unit> units_;
  int step_ = 0;
  std::set<std::string> disturbances_;  // what the disturbed processes saw, for the summary
  std::optional<Progress> progress_;    // from the first round on
};

nlohmann::json Sweep::adopt_earlier_processes(std::set<std::string>& interrupted) {
  nlohmann::json order = nlohmann::json::array();
  for (std::size_t u = 0; u < units_.size(); ++u) {
    CellOutcome& c = report_.cells[u];
    if (opt_.resume) {
      if (db_.query([&](auto& c2) { return k3store::cell_has_ok_aggregate(c2, c.cell_key); })) {
        c.skipped = "already measured (same build, target, parameters)";
        planner_.skip(u, c.skipped);
        continue;
      }
      const auto adopted =
          db_.query([&](auto& c2) { return k3store::orphan_processes(c2, c.cell_key); });
      const auto times =
          db_.query([&](auto& c2) { return k3store::process_times(c2, c.cell_key, adopted); });
      for (std::size_t i = 0; i < adopted.size(); ++i) {
        const auto state =
            db_.query([&](auto& c2) { return k3store::process_state(c2, c.cell_key, adopted[i]); });
        units_[u].refs.push_back(adopted[i]);
        units_[u].disturbed.push_back(state.disturbed);
        if (units_[u].iterations == 0) units_[u].iterations = state.iterations;
        interrupted.insert(adopted[i].run_uuid);
        planner_.adopt(u, k3stats::mean(times[i]), state.disturbed);
      }
      c.adopted = static_cast<int>(adopted.size());
    }
    order.push_back(c.cell_key);
  }
  return order;
}

void Sweep::write_run(const std::vector<CellSpec>& cells, const nlohmann::json& order,
                      const std::set<std::string>& interrupted) {
  const MeasureSettings& first = cells.empty() ? MeasureSettings{} : cells.front().settings;
  k3store::RunRecord run{report_.run_uuid,
                         opt_.command_line,
                         builds_.back().target->name(),
                         builds_.back().build_hash,
                         hostname(),
                         order.dump(),
                         opt_.rounds.min_processes,
                         first.repetitions,
                         first.warmup,
                         sweep_settings_json(builds_, opt_).dump()};
  std::vector<k3store::CellRecord> cell_rows;
  for (const auto& c : report_.cells)
    cell_rows.push_back({c.cell_key, builds_[c.build].target->name(), c.spec.op,
                         c.spec.shape.dump(), c.spec.params.dump(), builds_[c.build].build_hash,
                         c.spec.settings.to_json().dump()});
  db_.write(
      [run, cell_rows, interrupted](k3store::Connection& c) {
        k3store::Transaction tx(c);
        k3store::insert_run(c, run);
        for (const auto& cell : cell_rows) k3store::insert_cell(c, cell);
        for (const auto& r : interrupted) k3store::mark_interrupted(c, r);
        tx.commit();
      },
      1 + cell_rows.size() + interrupted.size());
}

void Sweep::write_aggregate(std::size_t u) {
  CellOutcome& c = report_.cells[u];
  Unit& unit = units_[u];
  std::vector<k3store::ProcessRef> used;
  for (std::size_t i = 0; i < unit.refs.size(); ++i)
    if (!unit.disturbed[i] || !opt_.rounds.remeasure_disturbed) used.push_back(unit.refs[i]);
  // Every process disturbed: the figures still say something, and the notes say what.
  if (used.empty()) used = unit.refs;
  std::set<std::string> runs{report_.run_uuid};
  for (const auto& r : unit.refs) runs.insert(r.run_uuid);
  if (unit.refs.empty()) {
    c.aggregate = {};
    c.aggregate.ok = false;
    c.aggregate.reason = unit.failure.empty() ? "no successful process" : unit.failure;
  } else if (!unit.failure.empty()) {
    c.aggregate = {};
    c.aggregate.ok = false;
    c.aggregate.reason = unit.failure;
    c.aggregate.processes = static_cast<int>(unit.refs.size());
  } else {
    const auto times =
        db_.query([&](auto& c2) { return k3store::process_times(c2, c.cell_key, used); });
    c.aggregate = aggregate_of(times, opt_.stats);
    c.aggregate.excluded_processes = static_cast<int>(unit.refs.size() - used.size());
    c.process_means.clear();
    c.process_rounds.clear();
    for (const auto& t : times) c.process_means.push_back(k3stats::mean(t));
    for (const auto& r : used) c.process_rounds.push_back(r.process_index);
  }
  c.disturbed = 0;
  for (bool d : unit.disturbed) c.disturbed += d;
  c.aggregate.stop_reason = planner_.unit(u).stop_reason;
  c.aggregate.run_uuid = report_.run_uuid;
  c.aggregate.cell_key = c.cell_key;
  c.aggregate.source_runs_json =
      nlohmann::json(std::vector<std::string>(runs.begin(), runs.end())).dump();
  db_.write([a = c.aggregate](k3store::Connection& c2) {
    k3store::Transaction tx(c2);
    k3store::insert_aggregate(c2, a);
    tx.commit();
  });
  c.has_aggregate = true;
  unit.aggregated = true;
}

void Sweep::write_finished() {
  for (std::size_t u = 0; u < units_.size(); ++u)
    if (planner_.unit(u).done && !units_[u].aggregated && report_.cells[u].skipped.empty())
      write_aggregate(u);
}

bool Sweep::wall_budget_spent() const {
  return opt_.wall_budget_s > 0 &&
         std::chrono::duration<double>(Clock::now() - start_).count() > opt_.wall_budget_s;
}

void Sweep::measure_rounds() {
  progress_.emplace(planner_.processes_left_at_least(), opt_.progress);
  // A target lost mid-sweep (a farm board taken out of the run) ends it: what was measured is
  // committed; the run says it was cut short, as a killed sweep's does.
  try {
    for (auto round = planner_.next_round(); !round.empty(); round = planner_.next_round()) {
      if (wall_budget_spent()) {
        planner_.end_all("wall-time budget (MDE not reached)");
        write_finished();
        break;
      }
      for (const std::size_t u : round) {
        if (planner_.unit(u).done) continue;
        // Within one process, a cell's baseline unit is measured by its candidate's process.
        if (within_ && report_.cells[u].build == 0) continue;
        measure_process(u);
        write_finished();
      }
    }
  } catch (const k3targets::TargetLost&) {
    progress_->finish();
    db_.write(
        [run = report_.run_uuid](k3store::Connection& c2) { k3store::mark_interrupted(c2, run); });
    throw;
  }
  progress_->finish();
}

// One runner process of unit `u` (within one process: of its cell's baseline too), run, counted,
// told and recorded.
void Sweep::measure_process(std::size_t u) {
  const CellOutcome& c = report_.cells[u];
  const Unit& unit = units_[u];
  const SweepBuild& build = builds_[c.build];
  const int process_index = planner_.unit(u).processes;
  show_progress(c, build, process_index);
  // A paired process does both builds' work: twice the time one build's process may take.
  const double timeout_s =
      (opt_.timeout_s > 0 ? opt_.timeout_s : build.target->config().timeout_s) * (within_ ? 2 : 1);
  const CellSpec spec = process_spec(c);
  if (kill_after_ && report_.processes_run == *kill_after_)
    die_mid_measurement(build, spec, timeout_s, unit);
  ProcessOutcome o =
      exec_.run(build, spec, process_index, unit.refs.empty(), unit.iterations, timeout_s);
  ++report_.processes_run;
  ++step_;
  add_process_times(o);
  if (within_ && o.ok && o.sides.size() != o.samples.size())
    o.ok = false, o.reason = "the paired process reported no sides of its repetitions";
  tell(c, process_index, o);
  if (!within_) {
    record(u, process_index, o);
  } else if (!o.ok) {
    record(u - 1, process_index, o);
    record(u, process_index, o);
  } else {
    auto [own, plugin] = split_build_sides(o);
    record(u - 1, process_index, plugin);  // the baseline: the plugin's side
    record(u, process_index, own);
  }
}

void Sweep::show_progress(const CellOutcome& c, const SweepBuild& build, int process_index) {
  progress_->set_total(step_ + planner_.processes_left_at_least());
  progress_->update(step_, fmt::format("{}{} p{}", c.spec.label(),
                                       within_               ? " [baseline+candidate]"
                                       : build.label.empty() ? ""
                                                             : " [" + build.label + "]",
                                       process_index + 1));
}

// The cell as its process measures it: within one process, with the baseline's plugin as the
// second build.
CellSpec Sweep::process_spec(const CellOutcome& c) const {
  CellSpec spec = c.spec;
  if (within_) {
    spec.settings.build_b = opt_.build_pairing.plugin;
    spec.settings.repetitions *= 2;  // each build keeps a process's worth of repetitions
  }
  return spec;
}

// The K3TUNE_TEST_KILL_AFTER hook's kill lands mid-measurement of a real runner process, after
// the processes before it are committed.
void Sweep::die_mid_measurement(const SweepBuild& build, const CellSpec& spec, double timeout_s,
                                const Unit& unit) {
  db_.flush();
  auto popt = k3targets::ProcessOptions::with_timeout(timeout_s);
  popt.kill_after_s = 0.05;
  run_cell_process(*build.target, spec, popt, unit.refs.empty(), unit.iterations);
  raise(SIGKILL);
}

// Where one process's time went, added to the sweep's totals.
void Sweep::add_process_times(const ProcessOutcome& o) {
  report_.child_wall_s += o.wall_ns * 1e-9;
  report_.kernel_s += o.kernel_ns * 1e-9;
  report_.warmup_s += o.warmup_s;
  if (o.timing.is_object()) {
    report_.check_s += o.timing.value("check_s", 0.0);
    report_.runner_setup_s += o.timing.value("setup_s", 0.0);
    report_.cache_build_s += o.timing.value("cache_build_s", 0.0);
  }
}

// One process's outcome for unit `u`: committed with its samples at once, then planned on.
void Sweep::record(std::size_t u, int process_index, const ProcessOutcome& o) {
  CellOutcome& c = report_.cells[u];
  Unit& unit = units_[u];
  k3store::ProcessRecord row{report_.run_uuid,
                             c.cell_key,
                             process_index,
                             step_ - 1,
                             o.ok,
                             o.exit_code,
                             o.reason,
                             o.path,
                             o.ok ? o.runner.dump() : "",
                             o.wall_ns,
                             o.kernel_ns,
                             o.disturbed,
                             o.timing.is_null() ? "" : o.timing.dump(),
                             o.samples};
  const std::size_t rows = 1 + row.samples.size();
  db_.write([row = std::move(row)](k3store::Connection& c2) { k3store::insert_process(c2, row); },
            rows);
  if (!o.ok) {
    unit.failure = o.reason;
    planner_.record_failure(u, o.reason);
    return;
  }
  unit.refs.push_back({report_.run_uuid, process_index});
  unit.disturbed.push_back(o.disturbed);
  if (unit.iterations == 0) unit.iterations = o.iterations;
  planner_.record_ok(u, o.mean_ns(), o.disturbed);
}

// What one runner process (both sides of a paired one) tells the person watching.
void Sweep::tell(const CellOutcome& c, int process_index, const ProcessOutcome& o) {
  if (!o.ok) {
    ++report_.processes_failed;
    progress_->note(fmt::format("k3tune: warning: {} {} process {}: {}", c.spec.label(),
                                to_kv(c.spec.params), process_index, o.reason));
    return;
  }
  if (!o.disturbed) return;
  ++report_.processes_disturbed;
  std::set<std::string> seen;
  for (const auto& sample : o.samples) seen.insert(sample.flags.begin(), sample.flags.end());
  disturbances_.insert(seen.begin(), seen.end());
  // A few one by one; a busy machine's many are one line at the end.
  if (report_.processes_disturbed <= kDisturbedNotes)
    progress_->note(
        fmt::format("k3tune: note: {} process {} was disturbed ({}){}", c.spec.label(),
                    process_index, fmt::join(seen, ", "),
                    opt_.rounds.remeasure_disturbed ? "; not counted, measured again" : ""));
}

SweepReport Sweep::finish() {
  report_.busy_machine =
      busy_machine_line(report_.processes_run, report_.processes_disturbed, disturbances_);
  if (!report_.busy_machine.empty()) {
    progress_->note(report_.busy_machine);
  } else if (report_.processes_disturbed > kDisturbedNotes) {
    progress_->note(fmt::format("k3tune: note: {} runner processes were disturbed in all ({})",
                                report_.processes_disturbed, fmt::join(disturbances_, ", ")));
  }
  report_.wall_s = std::chrono::duration<double>(Clock::now() - start_).count();
  db_.write([run = report_.run_uuid, wall = report_.wall_s, kernel = report_.kernel_s,
             warmup = report_.warmup_s](k3store::Connection& c2) {
    k3store::finish_run(c2, run, wall, kernel, warmup);
  });
  return std::move(report_);
}

}  // namespace

SweepReport run_sweep(k3store::Connection& db, const std::vector<SweepBuild>& builds,
                      const std::vector<CellSpec>& cells, const SweepOptions& opt) {
  k3store::DirectAccess direct(db);
  return run_sweep(direct, builds, cells, opt);
}

SweepReport run_sweep(k3store::DatabaseAccess& db, const std::vector<SweepBuild>& builds,
                      const std::vector<CellSpec>& cells, const SweepOptions& opt) {
  if (builds.empty()) throw std::invalid_argument("run_sweep: no build to measure");
  RunnerExecutor runner;
  Sweep sweep(db, builds, cells, opt, opt.executor != nullptr ? *opt.executor : runner);
  std::set<std::string> interrupted;
  const nlohmann::json order = sweep.adopt_earlier_processes(interrupted);
  sweep.write_run(cells, order, interrupted);
  sweep.write_finished();  // units whose adopted processes already complete them
  sweep.measure_rounds();
  return sweep.finish();
}

}  // namespace k3bench
