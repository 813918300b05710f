// `k3tune table show | validate | diff | verify`: read tuning tables (k3::tuner's table module),
// and re-measure one on a target.
#include <filesystem>
#include <iostream>
#include <map>
#include <optional>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "apps/cli/app_context.h"
#include "apps/cli/measuring_place.h"
#include "apps/scheduler/scheduler.h"
#include "harness/common/params/param_spec.h"
#include "harness/host/bench/catalog.h"
#include "harness/host/bench/user_error.h"
#include "tuner/table.h"
#include "tuner/verify_command.h"
#include "tuner/verify_output.h"

namespace k3cli {
namespace {

void add_show(CLI::App* table, AppContext& ctx) {
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
}

void add_validate(CLI::App* table, AppContext& ctx) {
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
}

void add_diff(CLI::App* table) {
  auto files = std::make_shared<std::vector<std::string>>();
  auto* diff =
      table->add_subcommand("diff", "entries added, removed and changed between two tables");
  diff->add_option("files", *files, "OLD NEW")->required()->expected(2);
  diff->callback([files] {
    std::cout << k3tuner::diff_tables(k3tuner::read_table(files->at(0)),
                                      k3tuner::read_table(files->at(1)));
  });
}

void add_explain(CLI::App* table, AppContext& ctx) {
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
}

}  // namespace

void add_table_command(CLI::App& app, AppContext& ctx) {
  auto* table = app.add_subcommand("table", "show, validate, diff or verify tuning tables");
  table->require_subcommand(1);
  add_show(table, ctx);
  add_validate(table, ctx);
  add_diff(table);
  add_explain(table, ctx);
  add_table_verify_command(table, ctx);
}

}  // namespace k3cli
