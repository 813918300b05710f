#include "sweep.h"

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <random>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "progress.h"
#include "provenance.h"
#include "runner_process.h"

namespace k3tune {
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

struct Planned {
  std::size_t cell;
  int process_index;
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
                     const std::string& build_hash, const MeasureSettings& settings) {
  const auto& tc = target.config();
  const nlohmann::json identity = {
      {"target", {{"name", tc.name}, {"kind", tc.kind}, {"vlen", tc.kind == "qemu" ? tc.vlen : 0}}},
      {"op", cell.op},
      {"shape", cell.shape},
      {"params", cell.params},
      {"build", build_hash},
      {"measure", settings.to_json()}};
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

SweepReport run_sweep(k3store::Connection& db, const k3targets::Target& target,
                      const std::string& build_hash, const std::vector<CellSpec>& cells,
                      const SweepOptions& opt) {
  const auto sweep_start = Clock::now();
  const int P = opt.settings.processes;
  const double timeout_s = opt.timeout_s > 0 ? opt.timeout_s : target.config().timeout_s;
  SweepReport report;
  report.run_uuid = new_uuid();

  // Plan: what each cell still needs, then the interleaved order.
  std::vector<std::vector<k3store::ProcessRef>> adopted(cells.size());
  std::vector<int> needed(cells.size(), P);
  nlohmann::json order = nlohmann::json::array();
  for (std::size_t i = 0; i < cells.size(); ++i) {
    CellOutcome c;
    c.spec = cells[i];
    c.cell_key = cell_key(target, cells[i], build_hash, opt.settings);
    if (opt.resume) {
      if (k3store::cell_has_ok_aggregate(db, c.cell_key)) {
        c.skipped = "already measured (same build, target, parameters)";
        needed[i] = 0;
      } else {
        adopted[i] = k3store::orphan_processes(db, c.cell_key);
        c.adopted = static_cast<int>(adopted[i].size());
        needed[i] = std::max(0, P - c.adopted);
      }
    }
    if (needed[i] > 0) order.push_back(c.cell_key);
    report.cells.push_back(std::move(c));
  }
  std::vector<Planned> plan;
  for (int p = 0; p < P; ++p)
    for (std::size_t i = 0; i < cells.size(); ++i)
      if (p < needed[i]) plan.push_back({i, static_cast<int>(adopted[i].size()) + p});

  {
    k3store::Transaction tx(db);
    k3store::insert_run(
        db, {report.run_uuid, opt.command_line, target.name(), build_hash, hostname(), order.dump(),
             P, opt.settings.repetitions, opt.settings.warmup});
    for (const auto& c : report.cells) {
      k3store::insert_cell(db, {c.cell_key, target.name(), c.spec.op, c.spec.shape.dump(),
                                c.spec.params.dump(), build_hash, opt.settings.to_json().dump()});
    }
    std::set<std::string> interrupted;
    for (const auto& refs : adopted)
      for (const auto& r : refs) interrupted.insert(r.run_uuid);
    for (const auto& r : interrupted) k3store::mark_interrupted(db, r);
    tx.commit();
  }

  // Cells with nothing left to measure but adopted processes get their aggregate now.
  std::vector<int> remaining = needed;
  std::vector<std::string> failure(cells.size());
  auto write_aggregate = [&](std::size_t i) {
    CellOutcome& c = report.cells[i];
    std::vector<k3store::ProcessRef> refs = adopted[i];
    std::set<std::string> runs{report.run_uuid};
    for (const auto& r : refs) runs.insert(r.run_uuid);
    auto mine = k3store::orphan_processes(db, c.cell_key);  // includes this run's own processes
    std::vector<k3store::ProcessRef> own;
    for (const auto& r : mine)
      if (r.run_uuid == report.run_uuid) own.push_back(r);
    refs.insert(refs.end(), own.begin(), own.end());
    if (!failure[i].empty() || refs.empty()) {
      c.aggregate = {};
      c.aggregate.ok = false;
      c.aggregate.reason = failure[i].empty() ? "no successful process" : failure[i];
    } else {
      const auto times = k3store::process_times(db, c.cell_key, refs);
      c.aggregate = aggregate_of(times, opt.stats);
      for (const auto& t : times) c.process_means.push_back(k3stats::mean(t));
    }
    c.aggregate.run_uuid = report.run_uuid;
    c.aggregate.cell_key = c.cell_key;
    c.aggregate.source_runs_json =
        nlohmann::json(std::vector<std::string>(runs.begin(), runs.end())).dump();
    if (!c.aggregate.ok) c.aggregate.processes = static_cast<int>(refs.size());
    k3store::Transaction tx(db);
    k3store::insert_aggregate(db, c.aggregate);
    tx.commit();
    c.has_aggregate = true;
  };
  for (std::size_t i = 0; i < cells.size(); ++i)
    if (needed[i] == 0 && report.cells[i].skipped.empty()) write_aggregate(i);

  const auto kill_after = kill_after_from_env();
  Progress progress(static_cast<int>(plan.size()), opt.progress);
  for (std::size_t step = 0; step < plan.size(); ++step) {
    const auto [i, process_index] = plan[step];
    CellOutcome& c = report.cells[i];
    if (!failure[i].empty()) {  // a failed cell is not retried within the run: it would fail (or
                                // hang) again
      if (--remaining[i] == 0) write_aggregate(i);
      continue;
    }
    progress.update(static_cast<int>(step),
                    fmt::format("{} p{}/{}", c.spec.label(), process_index + 1, P));
    auto popt = k3targets::ProcessOptions::with_timeout(timeout_s);
    const bool kill_now = kill_after && report.processes_run == *kill_after;
    if (kill_now) popt.kill_after_s = 0.05;
    const ProcessOutcome o = run_cell_process(target, c.spec, opt.settings, popt, process_index == 0);
    if (kill_now) raise(SIGKILL);
    ++report.processes_run;
    report.child_wall_s += o.wall_ns * 1e-9;
    report.kernel_s += o.kernel_ns * 1e-9;
    k3store::insert_process(
        db, {report.run_uuid, c.cell_key, process_index, static_cast<int>(step), o.ok, o.exit_code,
             o.reason, o.path, o.ok ? o.runner.dump() : "", o.wall_ns, o.kernel_ns, o.samples});
    if (!o.ok) {
      ++report.processes_failed;
      failure[i] = o.reason;
      progress.note(fmt::format("k3tune: warning: {} {} process {}: {}", c.spec.label(),
                                to_kv(c.spec.params), process_index, o.reason));
    }
    if (--remaining[i] == 0) write_aggregate(i);
  }
  progress.finish();
  report.wall_s = std::chrono::duration<double>(Clock::now() - sweep_start).count();
  k3store::finish_run(db, report.run_uuid, report.wall_s, report.kernel_s);
  return report;
}

}  // namespace k3tune
