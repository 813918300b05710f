// `k3tune tune-gates`: fit the threshold rule of a binary kernel choice (TCM on/off, IME2 or RVV)
// over a grid of shapes measured on a target or a farm board, optionally into a tuning table.
#include <fstream>
#include <iostream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "apps/cli/app_context.h"
#include "apps/cli/measuring_place.h"
#include "harness/host/bench/catalog.h"
#include "tuner/gate_command.h"
#include "tuner/table.h"

namespace k3cli {

void add_tune_gates_command(CLI::App& app, AppContext& ctx) {
  struct GateArgs {
    PlaceArgs place;
    k3tuner::GateCommand c;
    std::string table;
  };
  auto g = std::make_shared<GateArgs>();
  auto* gates = app.add_subcommand("tune-gates",
                                   "fit the threshold rule of a binary choice over many shapes");
  add_place_options(gates, g->place);
  gates->add_option("--model", g->c.model, "include the shapes of configs/models/NAME.toml");
  gates->add_option("--gate", g->c.gate, "tcm_decode | decode_path | prefill_path")
      ->capture_default_str();
  gates->add_option("--objective", g->c.objective, "time | instructions")->capture_default_str();
  gates->add_option("--k", g->c.ks, "K values of the grid (tcm_decode, decode_path)")
      ->delimiter(',');
  gates->add_option("--n", g->c.ns, "N values of the grid (tcm_decode, decode_path)")
      ->delimiter(',');
  gates->add_option("--m", g->c.ms, "M values (prefill_path)")->delimiter(',');
  gates->add_option("--params", g->c.params, "parameters held fixed, k=v,...");
  gates->add_flag("--force", g->c.force, "measure emulated features anyway (labelled)");
  gates->add_option("--plugin", g->c.plugin,
                    "instructions: the qemu counting plugin (default build/third_party/...)");
  gates->add_option("--table", g->table,
                    "add the fitted gate to this tuning table (validated before writing)");
  gates->callback([&ctx, g, gates] {
    auto& c = g->c;
    c.root = ctx.root;
    c.db_path = ctx.db_path();
    c.progress = !ctx.quiet;
    c.command_line = "k3tune tune-gates --gate " + c.gate;
    c.note = [&](const std::string& line) {
      if (!ctx.quiet && !ctx.json) std::cerr << line << "\n";
    };
    nlohmann::json table;
    if (!g->table.empty()) table = k3tuner::read_table(g->table);
    const MeasuringPlace place(ctx, g->place);
    const auto out = k3tuner::run_gates(place.target(), c);
    const nlohmann::json rule = out.rule.to_json(c.gate);
    if (!g->table.empty()) {
      table["gates"][c.gate] = rule;
      const auto problems =
          k3tuner::validate_table(table, ctx.root + "/configs/schema/tuning-table.schema.json")
              .lines();
      if (!problems.empty())
        throw k3bench::UserError(
            fmt::format("{}: the table with the gate is invalid: {}", g->table, problems.front()));
      std::ofstream f(g->table);
      f << table.dump(2) << "\n";
    }
    if (ctx.json) {
      nlohmann::json points = nlohmann::json::array();
      for (const auto& p : out.points)
        points.push_back({{"shape", p.shape},
                          {"yes", p.yes},
                          {"no", p.no},
                          {"bytes", p.bytes},
                          {"rule_takes", out.rule.takes(c.gate, p)}});
      std::cout << nlohmann::json{{"gate", c.gate},
                                  {"rule", rule},
                                  {"wrong", out.rule.wrong},
                                  {"points", points},
                                  {"run_uuid", out.run_uuid},
                                  {"forced_emulated", out.forced_emulated}}
                       .dump(2)
                << "\n";
      return;
    }
    fmt::print(
        "gate {} on {}{}: {} shapes\n", c.gate, out.facts.describe,
        out.forced_emulated ? " (EMULATED features, forced: says nothing about a board)" : "",
        out.points.size());
    const char* choice = c.gate == "tcm_decode" ? "tcm on" : "ime2";
    const char* other = c.gate == "tcm_decode" ? "tcm off" : "rvv";
    fmt::print("  {:<32} {:>12} {:>12} {:>8}  rule picks\n", "shape", choice, other,
               c.gate == "tcm_decode" ? "on/off" : "ime2/rvv");
    for (const auto& p : out.points) {
      const bool take = out.rule.takes(c.gate, p);
      fmt::print("  {:<32} {:>12.4g} {:>12.4g} {:>8.3f}  {}{}\n", k3bench::to_kv(p.shape), p.yes,
                 p.no, p.yes / p.no, take ? choice : other,
                 (take ? p.yes > p.no : p.no > p.yes) ? "  (wrong)" : "");
    }
    fmt::print(
        "rule: {}; total loss against the per-shape best {:.2f}%, wrong on {} of {} shapes{}\n",
        rule.dump(), 100 * out.rule.loss, out.rule.wrong.size(), out.points.size(),
        g->table.empty() ? "" : "; written into " + g->table);
  });
}

}  // namespace k3cli
