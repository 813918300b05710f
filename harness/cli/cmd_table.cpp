// `k3tune table show | validate | diff`: read tuning tables (k3::tuner's table module).
#include <iostream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "app_context.h"
#include "table.h"

namespace k3tune {

void add_table_command(CLI::App& app, AppContext& ctx) {
  auto* table = app.add_subcommand("table", "show, validate or diff tuning tables");
  table->require_subcommand(1);
  auto file = std::make_shared<std::string>();
  auto* show = table->add_subcommand("show", "one line per entry: class, parameters, speed-up with its CI");
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
  auto* validate = table->add_subcommand("validate", "check a table against the schema and its invariants");
  validate->add_option("file", *vfile, "table JSON")->required();
  validate->callback([&ctx, vfile] {
    const auto t = k3tuner::read_table(*vfile);
    const auto problems = k3tuner::validate_table(t, ctx.root + "/configs/schema/tuning-table.schema.json");
    if (ctx.json) {
      std::cout << nlohmann::json{{"file", *vfile}, {"valid", problems.empty()}, {"problems", problems}}.dump(2) << "\n";
    } else if (problems.empty()) {
      fmt::print("{}: valid ({} entries)\n", *vfile, t["entries"].size());
    } else {
      for (const auto& p : problems) fmt::print(stderr, "{}: {}\n", *vfile, p);
    }
    if (!problems.empty()) exit_code() = kProblems;
  });
  auto files = std::make_shared<std::vector<std::string>>();
  auto* diff = table->add_subcommand("diff", "entries added, removed and changed between two tables");
  diff->add_option("files", *files, "OLD NEW")->required()->expected(2);
  diff->callback([files] {
    std::cout << k3tuner::diff_tables(k3tuner::read_table(files->at(0)), k3tuner::read_table(files->at(1)));
  });
}

}  // namespace k3tune
