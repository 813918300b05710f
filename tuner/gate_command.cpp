#include "tuner/gate_command.h"

#include <filesystem>
#include <set>

#include <fmt/format.h>

#include "harness/host/bench/bench_session.h"
#include "harness/host/bench/catalog.h"
#include "harness/host/bench/defaults.h"
#include "harness/host/bench/provenance.h"
#include "harness/host/bench/sweep.h"
#include "harness/host/bench/user_error.h"
#include "harness/host/store/database.h"
#include "harness/host/store/results.h"
#include "k3k/w4b64.h"
#include "tuner/measurement_cache.h"
#include "tuner/objective.h"

namespace k3tuner {
namespace {

using k3bench::UserError;

// The measurements mean nothing, or cannot be taken, on this target: emulated features timed
// without --force, counts on a native runner, a layer gate without a usable IME2 layer.
// `out.forced_emulated` says whether the timings are of emulated features.
void refuse_unmeasurable(const k3targets::Target& target, const GateCommand& c, bool time,
                         GateOutcome& out) {
  // Both layer gates run one side on the ime2 layer: it must be usable on the target.
  const bool layers = c.gate != "tcm_decode";
  const bool emulated = out.facts.emulated_target ||
                        (c.gate == "tcm_decode" && out.facts.facts.at("tcm_emulated") != 0) ||
                        (layers && out.facts.ime2_emulated);
  if (time && emulated && !c.force) {
    throw UserError(fmt::format(
        "tune-gates --gate {} on target {}: {} emulated there, so its timings say nothing "
        "about a board (--force to measure anyway, or --objective instructions under qemu)",
        c.gate, target.name(),
        c.gate == "tcm_decode"      ? "TCM is"
        : out.facts.emulated_target ? "the target is"
                                    : "IME2 is"));
  }
  out.forced_emulated = time && emulated;
  if (!time && !target.emulated())
    throw UserError(
        fmt::format("--objective instructions counts under qemu-user: {} runs natively (a qemu "
                    "target, or a farm board whose exec prefix is qemu-user, counts)",
                    target.name()));
  if (layers && out.facts.facts.at("ime2") == 0)
    throw UserError(fmt::format(
        "tune-gates --gate {}: target {} has no usable IME2 layer{}", c.gate, target.name(),
        target.emulated() ? " (under qemu: an ime2-emu runner at VLEN 1024, with "
                            "K3_IME2_ASSUME_MARCHID=0x8000000041000002 in the environment)"
                          : ""));
}

// The cells measured, two per shape: the gate's "yes" side, then its "no" side. Shapes: the
// model's, plus the grid.
std::vector<k3bench::CellSpec> gate_cells(const GateCommand& c, const k3bench::Catalog& catalog,
                                          bool time) {
  const std::string op = c.gate == "prefill_path" ? "linear_prefill" : "linear_decode";
  const k3bench::OpSpec& spec = catalog.op(op, "tune-gates");
  std::set<std::pair<std::int64_t, std::int64_t>> nk;
  std::set<std::int64_t> ms(c.ms.begin(), c.ms.end());
  if (!c.model.empty()) {
    k3bench::GridRequest g;
    g.model = c.model;
    g.ops = {op};
    k3bench::MeasureSettings s;
    k3bench::ProcessPlan plan;
    for (const auto& cell : k3bench::expand_grid(g, catalog, c.root + "/configs/models", s, plan)) {
      nk.insert({cell.shape["n"].get<std::int64_t>(), cell.shape["k"].get<std::int64_t>()});
      if (cell.shape.contains("m")) ms.insert(cell.shape["m"].get<std::int64_t>());
    }
  }
  for (auto n : c.ns)
    for (auto k : c.ks) nk.insert({n, k});
  std::vector<k3bench::CellSpec> cells;
  auto fixed = k3bench::parse_kv(c.params, "--params");
  for (const auto& [n, k] : nk) {
    for (std::int64_t m : op == "linear_decode" ? std::set<std::int64_t>{1} : ms) {
      for (int side = 0; side < 2; ++side) {
        k3bench::CellSpec cell;
        cell.op = op;
        std::map<std::string, std::string> shape = {{"n", std::to_string(n)},
                                                    {"k", std::to_string(k)}};
        if (op == "linear_prefill") shape["m"] = std::to_string(m);
        cell.shape = catalog.normalise(spec, shape, true, "tune-gates");
        auto params = fixed;
        if (c.gate == "tcm_decode") {
          params["tcm"] = side == 0 ? "on" : "off";
        } else {
          cell.settings.path = side == 0 ? "ime2" : "rvv";
        }
        if (!time) params["workers"] = "1";
        cell.params = catalog.normalise(spec, params, false, "tune-gates");
        cells.push_back(cell);
      }
    }
  }
  return cells;
}

// Each cell's mean time, with the bench protocol (a run in the database: out.run_uuid).
std::vector<double> timed_means(const k3targets::Target& target, const GateCommand& c,
                                const std::vector<k3bench::CellSpec>& cells, GateOutcome& out) {
  std::vector<double> means(cells.size(), 0);
  auto db = k3store::open_for_writing(c.db_path);
  const std::string hash = k3bench::sha256_file(target.runner_path());
  if (!k3store::find_build(*db, hash))
    k3store::upsert_build(*db, k3bench::build_from_runner(target, hash));
  k3bench::SweepOptions opt;
  opt.rounds.min_processes = k3bench::defaults::kMinProcesses;
  opt.rounds.max_processes = k3bench::defaults::kMaxProcesses;
  opt.rounds.target_ci = k3bench::defaults::kTargetCi;
  opt.progress = c.progress;
  opt.command_line = c.command_line;
  const auto report = k3bench::run_sweep(*db, {{&target, hash, ""}}, cells, opt);
  out.run_uuid = report.run_uuid;
  for (std::size_t i = 0; i < cells.size(); ++i) {
    const auto& a = report.cells[i].aggregate;
    if (!a.ok || !a.mean_ns)
      throw UserError(fmt::format("tune-gates: {} failed: {}", cells[i].label(), a.reason));
    means[i] = *a.mean_ns;
  }
  return means;
}

// Each cell's instruction count under qemu-user.
std::vector<double> counted_means(const k3targets::Target& target, const GateCommand& c,
                                  const std::vector<k3bench::CellSpec>& cells) {
  std::vector<double> means(cells.size(), 0);
  const std::string plugin =
      c.plugin.empty() ? c.root + "/build/third_party/qemu-plugin/libinsn_count.so" : c.plugin;
  // Counts go through the measurement cache: a gate refitted over a wider grid counts only the
  // new shapes, and counts a tuning session took are not taken again.
  auto db = k3store::open_for_writing(c.db_path);
  MeasurementCache cache(*db);
  InstructionObjective objective(target, plugin);
  objective.use_cache(&cache, k3bench::sha256_file(target.runner_path()));
  for (std::size_t i = 0; i < cells.size(); ++i) {
    if (c.note)
      c.note(fmt::format("counting {} [{}]", cells[i].label(), k3params::to_kv(cells[i].params)));
    const Measurement m = objective.measure(cells[i], 0, 0);
    if (m.rejected)
      throw UserError(fmt::format("tune-gates: {} failed: {}", cells[i].label(), m.reason));
    means[i] = m.value;
  }
  return means;
}

}  // namespace

GateOutcome run_gates(const k3targets::Target& target, const GateCommand& c) {
  GateOutcome out;
  if (c.gate != "tcm_decode" && c.gate != "decode_path" && c.gate != "prefill_path")
    throw UserError(
        fmt::format("--gate: '{}' is not tcm_decode, decode_path or prefill_path", c.gate));
  const bool time = c.objective == "time";
  const k3bench::Catalog catalog = k3bench::Catalog::from_target(target);
  out.facts = probe_target(target);
  refuse_unmeasurable(target, c, time, out);
  const std::vector<k3bench::CellSpec> cells = gate_cells(c, catalog, time);
  const std::vector<double> means =
      time ? timed_means(target, c, cells, out) : counted_means(target, c, cells);
  for (std::size_t i = 0; i + 1 < cells.size(); i += 2) {
    GatePoint p;
    p.shape = cells[i].shape;
    p.n = p.shape["n"].get<std::int64_t>();
    p.k = p.shape["k"].get<std::int64_t>();
    p.m = p.shape.value("m", std::int64_t{1});
    p.bytes = k3k::W4B64Packed::packed_bytes(p.n, p.k);
    p.weights = p.n * p.k;
    p.yes = means[i];
    p.no = means[i + 1];
    out.points.push_back(p);
  }
  out.rule = fit_gate(c.gate, out.points);
  return out;
}

}  // namespace k3tuner
