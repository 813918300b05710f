#include "harness/host/bench/sweep.h"

#include "harness/host/stats/round_pairs.h"

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <map>
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

SweepReport run_sweep(k3store::Connection& db, const std::vector<SweepBuild>& builds,
                      const std::vector<CellSpec>& cells, const SweepOptions& opt) {
  k3store::DirectAccess direct(db);
  return run_sweep(direct, builds, cells, opt);
}

SweepReport run_sweep(k3store::DatabaseAccess& db, const std::vector<SweepBuild>& builds,
                      const std::vector<CellSpec>& cells, const SweepOptions& opt) {
  if (builds.empty()) throw std::invalid_argument("run_sweep: no build to measure");
  const auto sweep_start = Clock::now();
  RunnerExecutor runner;
  ProcessExecutor& exec = opt.executor != nullptr ? *opt.executor : runner;
  SweepReport report;
  report.run_uuid = opt.run_uuid.empty() ? new_uuid() : opt.run_uuid;

  // Units: cell-major, build-minor, so a round alternates the builds of each cell (A B A B ...).
  const std::size_t nb = builds.size();
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
    for (std::size_t bi = 0; bi < nb; ++bi) {
      CellOutcome c;
      c.spec = cells[ci];
      c.build = bi;
      c.cell_key = cell_key(*builds[bi].target, cells[ci], builds[bi].build_hash);
      report.cells.push_back(std::move(c));
      group_of.push_back(group);
    }
  }
  RoundPlanner planner(group_of, opt.rounds);
  std::vector<Unit> units(report.cells.size());
  std::set<std::string> interrupted;
  nlohmann::json order = nlohmann::json::array();
  for (std::size_t u = 0; u < units.size(); ++u) {
    CellOutcome& c = report.cells[u];
    if (opt.resume) {
      if (db.query([&](auto& c2) { return k3store::cell_has_ok_aggregate(c2, c.cell_key); })) {
        c.skipped = "already measured (same build, target, parameters)";
        planner.skip(u, c.skipped);
        continue;
      }
      const auto adopted =
          db.query([&](auto& c2) { return k3store::orphan_processes(c2, c.cell_key); });
      const auto times =
          db.query([&](auto& c2) { return k3store::process_times(c2, c.cell_key, adopted); });
      for (std::size_t i = 0; i < adopted.size(); ++i) {
        const auto state =
            db.query([&](auto& c2) { return k3store::process_state(c2, c.cell_key, adopted[i]); });
        units[u].refs.push_back(adopted[i]);
        units[u].disturbed.push_back(state.disturbed);
        if (units[u].iterations == 0) units[u].iterations = state.iterations;
        interrupted.insert(adopted[i].run_uuid);
        planner.adopt(u, k3stats::mean(times[i]), state.disturbed);
      }
      c.adopted = static_cast<int>(adopted.size());
    }
    order.push_back(c.cell_key);
  }

  {
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
    if (nb == 2) settings["build_pairing"] = opt.build_pairing.to_json();
    const MeasureSettings& first = cells.empty() ? MeasureSettings{} : cells.front().settings;
    k3store::RunRecord run{
        report.run_uuid, opt.command_line, builds.back().target->name(), builds.back().build_hash,
        hostname(),      order.dump(),     opt.rounds.min_processes,     first.repetitions,
        first.warmup,    settings.dump()};
    std::vector<k3store::CellRecord> cell_rows;
    for (const auto& c : report.cells)
      cell_rows.push_back({c.cell_key, builds[c.build].target->name(), c.spec.op,
                           c.spec.shape.dump(), c.spec.params.dump(), builds[c.build].build_hash,
                           c.spec.settings.to_json().dump()});
    db.write(
        [run, cell_rows, interrupted](k3store::Connection& c) {
          k3store::Transaction tx(c);
          k3store::insert_run(c, run);
          for (const auto& cell : cell_rows) k3store::insert_cell(c, cell);
          for (const auto& r : interrupted) k3store::mark_interrupted(c, r);
          tx.commit();
        },
        1 + cell_rows.size() + interrupted.size());
  }

  auto write_aggregate = [&](std::size_t u) {
    CellOutcome& c = report.cells[u];
    Unit& unit = units[u];
    std::vector<k3store::ProcessRef> used;
    for (std::size_t i = 0; i < unit.refs.size(); ++i)
      if (!unit.disturbed[i] || !opt.rounds.remeasure_disturbed) used.push_back(unit.refs[i]);
    // Every process disturbed: the figures still say something, and the notes say what.
    if (used.empty()) used = unit.refs;
    std::set<std::string> runs{report.run_uuid};
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
          db.query([&](auto& c2) { return k3store::process_times(c2, c.cell_key, used); });
      c.aggregate = aggregate_of(times, opt.stats);
      c.aggregate.excluded_processes = static_cast<int>(unit.refs.size() - used.size());
      c.process_means.clear();
      c.process_rounds.clear();
      for (const auto& t : times) c.process_means.push_back(k3stats::mean(t));
      for (const auto& r : used) c.process_rounds.push_back(r.process_index);
    }
    c.disturbed = 0;
    for (bool d : unit.disturbed) c.disturbed += d;
    c.aggregate.stop_reason = planner.unit(u).stop_reason;
    c.aggregate.run_uuid = report.run_uuid;
    c.aggregate.cell_key = c.cell_key;
    c.aggregate.source_runs_json =
        nlohmann::json(std::vector<std::string>(runs.begin(), runs.end())).dump();
    db.write([a = c.aggregate](k3store::Connection& c2) {
      k3store::Transaction tx(c2);
      k3store::insert_aggregate(c2, a);
      tx.commit();
    });
    c.has_aggregate = true;
    unit.aggregated = true;
  };
  auto write_finished = [&]() {
    for (std::size_t u = 0; u < units.size(); ++u)
      if (planner.unit(u).done && !units[u].aggregated && report.cells[u].skipped.empty())
        write_aggregate(u);
  };
  write_finished();  // units whose adopted processes already complete them

  const auto kill_after = kill_after_from_env();
  // Two builds in one process: units are cell-major, build-minor, so a cell's baseline is u - 1.
  const bool within = opt.build_pairing.within() && nb == 2;
  int step = 0;
  std::set<std::string> disturbances;  // what the disturbed processes saw, for the summary
  Progress progress(planner.processes_left_at_least(), opt.progress);
  // One process's outcome for unit `u`: committed with its samples at once, then planned on.
  auto record = [&](std::size_t u, int process_index, const ProcessOutcome& o) {
    CellOutcome& c = report.cells[u];
    Unit& unit = units[u];
    k3store::ProcessRecord row{report.run_uuid,
                               c.cell_key,
                               process_index,
                               step - 1,
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
    db.write([row = std::move(row)](k3store::Connection& c2) { k3store::insert_process(c2, row); },
             rows);
    if (!o.ok) {
      unit.failure = o.reason;
      planner.record_failure(u, o.reason);
      return;
    }
    unit.refs.push_back({report.run_uuid, process_index});
    unit.disturbed.push_back(o.disturbed);
    if (unit.iterations == 0) unit.iterations = o.iterations;
    planner.record_ok(u, o.mean_ns(), o.disturbed);
  };
  // What one runner process (both sides of a paired one) tells the person watching.
  auto tell = [&](const CellOutcome& c, int process_index, const ProcessOutcome& o) {
    if (!o.ok) {
      ++report.processes_failed;
      progress.note(fmt::format("k3tune: warning: {} {} process {}: {}", c.spec.label(),
                                to_kv(c.spec.params), process_index, o.reason));
      return;
    }
    if (!o.disturbed) return;
    ++report.processes_disturbed;
    std::set<std::string> seen;
    for (const auto& sample : o.samples) seen.insert(sample.flags.begin(), sample.flags.end());
    disturbances.insert(seen.begin(), seen.end());
    // A few one by one; a busy machine's many are one line at the end.
    if (report.processes_disturbed <= kDisturbedNotes)
      progress.note(
          fmt::format("k3tune: note: {} process {} was disturbed ({}){}", c.spec.label(),
                      process_index, fmt::join(seen, ", "),
                      opt.rounds.remeasure_disturbed ? "; not counted, measured again" : ""));
  };
  // A target lost mid-sweep (a farm board taken out of the run) ends it: what was measured is
  // committed; the run says it was cut short, as a killed sweep's does.
  try {
    for (auto round = planner.next_round(); !round.empty(); round = planner.next_round()) {
      if (opt.wall_budget_s > 0 &&
          std::chrono::duration<double>(Clock::now() - sweep_start).count() > opt.wall_budget_s) {
        planner.end_all("wall-time budget (MDE not reached)");
        write_finished();
        break;
      }
      for (const std::size_t u : round) {
        if (planner.unit(u).done) continue;
        // Within one process, a cell's baseline unit is measured by its candidate's process.
        if (within && report.cells[u].build == 0) continue;
        CellOutcome& c = report.cells[u];
        Unit& unit = units[u];
        const SweepBuild& build = builds[c.build];
        const int process_index = planner.unit(u).processes;
        progress.set_total(step + planner.processes_left_at_least());
        progress.update(step, fmt::format("{}{} p{}", c.spec.label(),
                                          within                ? " [baseline+candidate]"
                                          : build.label.empty() ? ""
                                                                : " [" + build.label + "]",
                                          process_index + 1));
        // A paired process does both builds' work: twice the time one build's process may take.
        const double timeout_s =
            (opt.timeout_s > 0 ? opt.timeout_s : build.target->config().timeout_s) *
            (within ? 2 : 1);
        CellSpec spec = c.spec;
        if (within) {
          spec.settings.build_b = opt.build_pairing.plugin;
          spec.settings.repetitions *= 2;  // each build keeps a process's worth of repetitions
        }
        if (kill_after && report.processes_run == *kill_after) {
          // The hook's kill lands mid-measurement of a real runner process, after the processes
          // before it are committed.
          db.flush();
          auto popt = k3targets::ProcessOptions::with_timeout(timeout_s);
          popt.kill_after_s = 0.05;
          run_cell_process(*build.target, spec, popt, unit.refs.empty(), unit.iterations);
          raise(SIGKILL);
        }
        ProcessOutcome o =
            exec.run(build, spec, process_index, unit.refs.empty(), unit.iterations, timeout_s);
        ++report.processes_run;
        ++step;
        report.child_wall_s += o.wall_ns * 1e-9;
        report.kernel_s += o.kernel_ns * 1e-9;
        report.warmup_s += o.warmup_s;
        if (o.timing.is_object()) {
          report.check_s += o.timing.value("check_s", 0.0);
          report.runner_setup_s += o.timing.value("setup_s", 0.0);
          report.cache_build_s += o.timing.value("cache_build_s", 0.0);
        }
        if (within && o.ok && o.sides.size() != o.samples.size())
          o.ok = false, o.reason = "the paired process reported no sides of its repetitions";
        tell(c, process_index, o);
        if (!within) {
          record(u, process_index, o);
        } else if (!o.ok) {
          record(u - 1, process_index, o);
          record(u, process_index, o);
        } else {
          auto [own, plugin] = split_build_sides(o);
          record(u - 1, process_index, plugin);  // the baseline: the plugin's side
          record(u, process_index, own);
        }
        write_finished();
      }
    }
  } catch (const k3targets::TargetLost&) {
    progress.finish();
    db.write(
        [run = report.run_uuid](k3store::Connection& c2) { k3store::mark_interrupted(c2, run); });
    throw;
  }
  progress.finish();
  report.busy_machine =
      busy_machine_line(report.processes_run, report.processes_disturbed, disturbances);
  if (!report.busy_machine.empty()) {
    progress.note(report.busy_machine);
  } else if (report.processes_disturbed > kDisturbedNotes) {
    progress.note(fmt::format("k3tune: note: {} runner processes were disturbed in all ({})",
                              report.processes_disturbed, fmt::join(disturbances, ", ")));
  }
  report.wall_s = std::chrono::duration<double>(Clock::now() - sweep_start).count();
  db.write([run = report.run_uuid, wall = report.wall_s, kernel = report.kernel_s,
            warmup = report.warmup_s](k3store::Connection& c2) {
    k3store::finish_run(c2, run, wall, kernel, warmup);
  });
  return report;
}

}  // namespace k3bench
