// `k3tune publish DIR`: the static site over every night and run in the database (k3::publish),
// written incrementally: prints what it read, what it wrote and how long each part took. Exit: 0
// published; 2 bad input (DIR holds something other than an earlier publish, not a k3tune
// database; nothing written); 5 no site (bad rules file, missing chart scripts, unwritable DIR).
#include <iostream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "apps/cli/app_context.h"
#include "apps/cli/report_context.h"
#include "harness/host/store/sqlite.h"
#include "reports/publish/publish.h"
#include "reports/report_error.h"

namespace k3cli {

void add_publish_command(CLI::App& app, AppContext& ctx) {
  struct Args {
    std::string dir, rules, js;
  };
  auto a = std::make_shared<Args>();
  auto* cmd = app.add_subcommand(
      "publish",
      "one static site over every night and run: index, nights, histories with change points, "
      "instruction counts per op and VLEN, tables night by night (rewrites only changed pages)");
  cmd->add_option("dir", a->dir, "the site's folder (new, empty, or an earlier publish)")
      ->required();
  cmd->add_option("--rules", a->rules,
                  "regression rules: minimum effects of change points (default: "
                  "<root>/configs/regression.toml)");
  cmd->add_option("--js", a->js,
                  "vendored Vega scripts (default: $K3TUNE_JS_DIR or <root>/build/third_party/js)");
  cmd->callback([&ctx, a] {
    k3publish::PublishRequest rq;
    rq.db_path = ctx.db_path();
    rq.out_dir = a->dir;
    rq.rules_file = a->rules.empty() ? ctx.root + "/configs/regression.toml" : a->rules;
    rq.js_dir = a->js.empty() ? default_js_dir(ctx) : a->js;
    rq.generator = "k3tune " K3TUNE_VERSION;
    k3publish::PublishOutcome o;
    try {
      o = k3publish::publish(rq);
    } catch (const k3publish::PublishInputError& e) {
      std::cerr << "k3tune: publish: " << e.what() << "\n";
      exit_code() = kUsage;
      return;
    } catch (const k3store::StoreError& e) {
      std::cerr << "k3tune: publish: " << e.what() << "\n";
      exit_code() = kUsage;
      return;
    } catch (const k3reports::ReportError& e) {
      std::cerr << "k3tune: publish: " << e.what() << "\n";
      exit_code() = kReportFailed;
      return;
    }
    const auto& w = o.write;
    if (ctx.json) {
      std::cout << nlohmann::json{{"dir", rq.out_dir},
                                  {"nights", o.nights},
                                  {"runs", o.runs},
                                  {"histories", o.histories},
                                  {"figures", o.figures},
                                  {"tables", o.tables},
                                  {"files", w.files},
                                  {"written", w.written},
                                  {"unchanged", w.unchanged},
                                  {"removed", w.removed},
                                  {"bytes", w.bytes},
                                  {"largest_page", w.largest_page},
                                  {"largest_page_bytes", w.largest_page_bytes},
                                  {"written_paths", w.written_paths},
                                  {"left", w.left},
                                  {"read_s", o.read_s},
                                  {"render_s", o.render_s},
                                  {"write_s", o.write_s},
                                  {"total_s", o.total_s}}
                       .dump(2)
                << "\n";
      return;
    }
    fmt::print("read {} nights, {} runs, {} histories ({} figures), {} tables from {}\n", o.nights,
               o.runs, o.histories, o.figures, o.tables, rq.db_path);
    fmt::print(
        "{}: {} files, {} written, {} unchanged, {} removed; {:.1f} MB, largest page {} "
        "({:.0f} KB)\n",
        rq.out_dir, w.files, w.written, w.unchanged, w.removed, w.bytes / 1e6, w.largest_page,
        w.largest_page_bytes / 1e3);
    for (const auto& line : w.left) fmt::print("{}\n", line);
    fmt::print("time: read {:.2f} s, render {:.2f} s, write {:.2f} s, total {:.2f} s\n", o.read_s,
               o.render_s, o.write_s, o.total_s);
    fmt::print("open {}/index.html\n", rq.out_dir);
  });
}

}  // namespace k3cli
