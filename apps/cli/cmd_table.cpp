// `k3tune table show | validate | diff | verify`: read tuning tables (k3::tuner's table module),
// and re-measure one on a target.
#include <iostream>
#include <map>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "apps/cli/app_context.h"
#include "apps/cli/measuring_place.h"
#include "apps/cli/verify_slurm.h"
#include "harness/common/params/param_spec.h"
#include "harness/host/bench/catalog.h"
#include "harness/host/bench/user_error.h"
#include "tuner/table.h"
#include "tuner/verify_command.h"

namespace k3cli {

void add_table_command(CLI::App& app, AppContext& ctx) {
  auto* table = app.add_subcommand("table", "show, validate, diff or verify tuning tables");
  table->require_subcommand(1);
  auto file = std::make_shared<std::string>();
  auto* show =
      table->add_subcommand("show", "one line per entry: class, parameters, speed-up with its CI");
  show->add_option("file", *file, "table JSON")->required();
  show->callback([&ctx, file] {
    const auto t = k3tuner::read_table(*file);
    if (ctx.json) {
      std::cout << t.dump(2) << "\n";
      return;
    }
    std::cout << k3tuner::show_table(t);
  });
  auto vfile = std::make_shared<std::string>();
  auto* validate =
      table->add_subcommand("validate", "check a table against the schema and its invariants");
  validate->add_option("file", *vfile, "table JSON")->required();
  validate->callback([&ctx, vfile] {
    const auto t = k3tuner::read_table(*vfile);
    const auto check =
        k3tuner::validate_table(t, ctx.root + "/configs/schema/tuning-table.schema.json");
    const auto problems = check.lines();
    if (ctx.json) {
      std::cout << nlohmann::json{{"file", *vfile},
                                  {"valid", check.valid()},
                                  {"problems", problems},
                                  {"schema_problems", check.schema_problems},
                                  {"loader", check.loader.empty() ? nlohmann::json(nullptr)
                                                                  : nlohmann::json(check.loader)}}
                       .dump(2)
                << "\n";
    } else if (check.valid()) {
      fmt::print("{}: valid ({} entries)\n", *vfile, t["entries"].size());
    } else {
      for (const auto& p : problems) fmt::print(stderr, "{}: {}\n", *vfile, p);
    }
    if (!check.valid()) exit_code() = kProblems;
  });
  auto files = std::make_shared<std::vector<std::string>>();
  auto* diff =
      table->add_subcommand("diff", "entries added, removed and changed between two tables");
  diff->add_option("files", *files, "OLD NEW")->required()->expected(2);
  diff->callback([files] {
    std::cout << k3tuner::diff_tables(k3tuner::read_table(files->at(0)),
                                      k3tuner::read_table(files->at(1)));
  });

  struct ExplainArgs {
    std::string file, op, shape, path;
  };
  auto x = std::make_shared<ExplainArgs>();
  auto* explain = table->add_subcommand(
      "explain",
      "which entry (or the kernel defaults) the kernel library gives a shape, and by which rule");
  explain->add_option("file", x->file, "table JSON")->required();
  explain->add_option("--op", x->op, "op, e.g. linear_decode")->required();
  explain->add_option("--shape", x->shape, "shape k=v,... as k3bench takes it")->required();
  explain->add_option("--path", x->path,
                      "generic | rvv | ime2 (default: every layer the table has for the op)");
  explain->callback([&ctx, x] {
    std::map<std::string, std::int64_t> shape;
    for (const auto& [k, v] : k3bench::parse_kv(x->shape, "--shape")) {
      try {
        std::size_t used = 0;
        shape[k] = std::stoll(v, &used);
        if (used != v.size()) throw std::invalid_argument(v);
      } catch (const std::exception&) {
        throw k3bench::UserError(fmt::format("--shape: {}={} is not an integer", k, v));
      }
    }
    const auto answers =
        k3tuner::explain_shape(k3tuner::read_table(x->file), x->op, x->path, shape);
    if (ctx.json) {
      nlohmann::json j = nlohmann::json::array();
      for (const auto& a : answers) j.push_back(a.to_json());
      std::cout << j.dump(2) << "\n";
      return;
    }
    for (const auto& a : answers) {
      const std::string cls = k3params::to_kv(a.shape_class);
      if (a.how == "entry")
        fmt::print("{} {} on {}: class {}: its own entry {}: {}\n", x->op, x->shape, a.path, cls,
                   a.entry_id, k3params::to_kv(a.params));
      else if (a.how == "rule")
        fmt::print(
            "{} {} on {}: class {} has no entry; the table's rule for {} on {} ({}) gives "
            "{}: {}\n",
            x->op, x->shape, a.path, cls, x->op, a.path, fmt::join(a.decisions, ", "), a.entry_id,
            k3params::to_kv(a.params));
      else if (a.how == "nearest")
        fmt::print(
            "{} {} on {}: class {} has no entry; the nearest class ({:.2f} in summed |log2| "
            "ratios, the "
            "missing-shape rule) is entry {}: {}\n",
            x->op, x->shape, a.path, cls, a.distance, a.entry_id, k3params::to_kv(a.params));
      else
        fmt::print(
            "{} {} on {}: class {}: no entry of this op and layer with the same class keys: the "
            "kernel "
            "defaults\n",
            x->op, x->shape, a.path, cls);
    }
  });

  struct VerifyArgs {
    PlaceArgs place;
    k3tuner::VerifyCommand c;
    std::vector<std::string> tables;
    std::string reservation;
  };
  auto v = std::make_shared<VerifyArgs>();
  auto* verify = table->add_subcommand("verify",
                                       "re-measure the table's choices against the defaults, "
                                       "interleaved: realised speed-up per entry");
  verify
      ->add_option(
          "--table", v->tables,
          "table JSON (repeatable: each verified in turn; with --farm and no --board/--tag, on the "
          "board that made it)")
      ->required();
  add_place_options(verify, v->place);
  verify
      ->add_option("--processes", v->c.processes,
                   "processes per entry (within: each holds both sides, and more follow until "
                   "--mde; rounds: per side)")
      ->capture_default_str();
  verify
      ->add_option("--design", v->c.design,
                   "within: the defaults and the table's parameters alternate repetitions A B, B "
                   "A, ... inside every process (the process-to-process spread cancels); rounds: "
                   "one process per side and round")
      ->check(CLI::IsMember({"within", "rounds"}))
      ->capture_default_str();
  verify
      ->add_option("--mde", v->c.mde,
                   "within: after --processes, add processes until the minimum detectable effect "
                   "is at most this fraction (default: each entry's verdict threshold, its op's "
                   "minimum effect in the rules raised to the noise floor; 0: exactly --processes)")
      ->check(CLI::Range(0.0, 0.99));
  verify
      ->add_option("--max-processes", v->c.max_processes,
                   "within: the most processes an entry gets while its MDE is above the target")
      ->check(CLI::Range(2, 10000))
      ->capture_default_str();
  verify->add_option("-R,--reps", v->c.settings.repetitions, "repetitions per side and process")
      ->capture_default_str();
  verify->add_option("--min-time", v->c.settings.min_time_s, "seconds per repetition at least")
      ->capture_default_str();
  verify->add_option(
      "--rules", v->c.rules_file,
      "regression rules: each entry's minimum effect (default: <root>/configs/regression.toml)");
  verify->add_flag("--force", v->c.force,
                   "measure a table made for another board, or on an emulated target");
  verify->add_option("--reservation", v->reservation,
                     "a farm scheduled by Slurm: run the verification's jobs in this reservation");
  verify->callback([&ctx, v, verify] {
    v->c.root = ctx.root;
    v->c.db_path = ctx.db_path();
    if (verify_on_slurm(ctx, v->place, v->tables, v->reservation)) return;
    nlohmann::json all = nlohmann::json::array();
    for (const auto& file : v->tables) {
      k3tuner::VerifyCommand c = v->c;
      c.table = file;
      PlaceArgs place = v->place;
      // On a farm, a table is verified on the board that made it unless told otherwise.
      if (!place.farm.empty() && place.boards.empty() && place.tags.empty()) {
        const auto t = k3tuner::read_table(file);
        if (t.contains("board") && t["board"].contains("name"))
          place.boards = {t["board"]["name"].get<std::string>()};
      }
      const MeasuringPlace where(ctx, place, *verify);
      c.command_line = "k3tune table verify --table " + file + " (" + where.describe() + ")";
      const auto out = k3tuner::run_verify(where.target(), c);
      if (out.slower > 0 || out.failed > 0) exit_code() = kProblems;
      if (ctx.json) {
        nlohmann::json entries = nlohmann::json::array();
        for (const auto& e : out.entries)
          entries.push_back({{"id", e.id},
                             {"verdict", e.verdict},
                             {"shape", e.shape},
                             {"params", e.params},
                             {"claimed_speedup", e.claimed},
                             {"evidence", e.evidence.to_json()},
                             {"min_effect", e.threshold},
                             {"mde", e.mde},
                             {"mde_target", e.mde_target},
                             {"stop_reason", e.stop_reason}});
        all.push_back({{"table", file},
                       {"target", out.facts.describe},
                       {"run", out.run_uuid},
                       {"entries", entries},
                       {"faster", out.faster},
                       {"slower", out.slower},
                       {"no_difference", out.same},
                       {"failed", out.failed},
                       {"geomean_speedup", out.geomean_speedup},
                       {"verdict", out.verdict},
                       {"design", c.design},
                       {"rules", out.rules}});
        continue;
      }
      if (v->tables.size() > 1) fmt::print("{}{}\n", &file == &v->tables.front() ? "" : "\n", file);
      fmt::print("target {}; run {}; {}\n", out.facts.describe, out.run_uuid,
                 c.design == "within" ? "both sides alternating inside every process"
                                      : "one process per side and round");
      fmt::print("{:<44} {:>12} {:>12} {:>9} {:>17} {:>8}  {}\n", "entry", "table ns",
                 "defaults ns", "speed-up", "95% CI", "claimed", "verdict");
      for (const auto& e : out.entries) {
        if (e.verdict.starts_with("failed")) {
          fmt::print("{:<44} {}\n", e.id, e.verdict);
          continue;
        }
        const std::string verdict =
            e.verdict == "no difference"
                ? fmt::format("no difference (within +-{:.1f}%)", 100 * e.mde)
                : fmt::format("{} (at least {:.1f}%)", e.verdict, 100 * e.threshold);
        fmt::print("{:<44} {:>12.4g} {:>12.4g} {:>8.3f}x {:>8.3f}..{:<7.3f} {:>7.3f}x  {}; {} {}: {}\n",
                   e.id, e.evidence.mean, e.evidence.default_mean, e.evidence.speedup,
                   e.evidence.speedup_low, e.evidence.speedup_high, e.claimed, verdict,
                   e.evidence.processes, c.design == "within" ? "processes" : "rounds",
                   e.stop_reason);
      }
      fmt::print("{} (rules: {})\n", out.verdict, out.rules);
    }
    // One table: its object (as before); several: {"tables": [...]}.
    if (ctx.json)
      std::cout << (all.size() == 1 ? all[0] : nlohmann::json{{"tables", all}}).dump(2) << "\n";
  });
}

}  // namespace k3cli
