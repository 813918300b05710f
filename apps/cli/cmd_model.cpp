// `k3tune model`: parse options, run a model's whole-model cells through the sweep (k3::bench
// model_session), print the llm_bench-style table with the published figures beside it.
#include <iostream>
#include <sstream>

#include <fmt/format.h>

#include "apps/cli/app_context.h"
#include "apps/cli/measuring_place.h"
#include "apps/cli/model_ab.h"
#include "harness/host/bench/model_session.h"

namespace k3cli {
namespace {

std::vector<int> parse_lengths(const std::string& text, const char* option) {
  std::vector<int> out;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    try {
      std::size_t used = 0;
      const int v = std::stoi(item, &used);
      if (used != item.size() || v < 1 || v > (1 << 20)) throw std::invalid_argument(item);
      out.push_back(v);
    } catch (const std::exception&) {
      throw k3bench::UserError(
          fmt::format("{}: '{}' is not a token count in [1, 1048576]", option, item));
    }
  }
  return out;
}

struct ModelArgs {
  PlaceArgs place;
  std::string model, pp = "64,128,256,512,1024", tg = "128";
  int tg_prompt = 1, depth = 0, processes = 3, reps = 5, warmup = 1;
  std::vector<std::string> pg;
  double target_ci = 0, timeout = 0;
  std::string params, path = "auto", check = "sample", trace, baseline_runner, baseline_build,
                      table;
  bool resume = false, remeasure = true;
};

// The tests: prefill, decode, and the prefill-then-decode ones, on a cache of --depth tokens.
void add_model_test_options(CLI::App* cmd, ModelArgs& a) {
  cmd->add_option("--pp", a.pp, "prompt lengths of the prefill tests (comma list; '' for none)")
      ->capture_default_str();
  cmd->add_option("--tg", a.tg, "decode steps of the decode tests (comma list; '' for none)")
      ->capture_default_str();
  cmd->add_option("--tg-prompt", a.tg_prompt, "tokens prefilled (untimed) before decoding")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 20));
  cmd->add_option("--depth", a.depth,
                  "tokens already in the KV cache before every test, prefilled untimed "
                  "(llama-bench -d); the decode tests' prompt when > 0")
      ->capture_default_str()
      ->check(CLI::Range(0, 1 << 20));
  cmd->add_option("--pg", a.pg,
                  "P,G: a prefill of P tokens then G decode steps on one cache, timed as one test "
                  "(MNN llm_bench -pg; repeatable)");
}

// How much each test is measured: processes, repetitions per process.
void add_model_budget_options(CLI::App* cmd, ModelArgs& a) {
  cmd->add_option("-P,--processes", a.processes, "runner processes per test (fixed, as the peers)")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000));
  cmd->add_option(
         "--target-ci", a.target_ci,
         "instead: add interleaved processes until the 95% CI is this fraction of the mean")
      ->check(CLI::Range(0.0, 0.99));
  cmd->add_option("-R,--reps", a.reps, "timed runs per process")
      ->capture_default_str()
      ->check(CLI::Range(1, 10000));
  cmd->add_option("--warmup", a.warmup, "untimed runs per process first")
      ->capture_default_str()
      ->check(CLI::Range(0, 10000));
}

// What each runner process runs, and how the sweep treats it.
void add_model_runner_options(CLI::App* cmd, ModelArgs& a) {
  cmd->add_option("--params", a.params,
                  "model_pp/model_tg parameters: workers, kv_dtype, gdn_chunk, weight_seed");
  cmd->add_option("--path", a.path, "kernel layer: auto|generic|rvv|ime2")->capture_default_str();
  cmd->add_option("--check", a.check, "first process's forward check: sample|none")
      ->capture_default_str();
  cmd->add_option("--timeout", a.timeout,
                  "seconds per runner process (default: the target's timeout_s)");
  cmd->add_flag("--resume", a.resume, "skip tests already measured for this build and target");
  cmd->add_flag("!--no-remeasure", a.remeasure,
                "keep disturbed processes as they are instead of measuring the test once more");
}

// An A/B in the same interleaved rounds: against another build, or a table against the defaults.
void add_model_comparison_options(CLI::App* cmd, ModelArgs& a) {
  cmd->add_option("--baseline-runner", a.baseline_runner,
                  "A/B: also measure this k3bench in the same interleaved rounds; the verdict per "
                  "test and which ops the change came from");
  cmd->add_option("--baseline-build", a.baseline_build,
                  "A/B against a build hash the database keeps a runner for");
  cmd->add_option("--table", a.table,
                  "A/B: every test with this tuning table and with the built-in defaults, in the "
                  "same interleaved rounds; what the table is worth to the whole model, by op "
                  "(a local or qemu target)");
}

k3bench::ModelRequest model_request(const AppContext& ctx, const ModelArgs& a,
                                    const CLI::App& cmd) {
  k3bench::ModelRequest r;
  r.model = a.model;
  r.runs.prompt_lengths = a.pp.empty() ? std::vector<int>{} : parse_lengths(a.pp, "--pp");
  r.runs.decode_steps = a.tg.empty() ? std::vector<int>{} : parse_lengths(a.tg, "--tg");
  r.runs.decode_prompt = a.tg_prompt;
  r.runs.depth = a.depth;
  for (const std::string& pg : a.pg) {
    const std::vector<int> v = parse_lengths(pg, "--pg");
    if (v.size() != 2)
      throw k3bench::UserError(
          fmt::format("--pg: '{}' is not P,G (prompt tokens, decode steps)", pg));
    r.runs.prefill_then_generate.emplace_back(v[0], v[1]);
  }
  r.params = a.params;
  r.published = ctx.root + "/configs/published/k3.toml";
  r.trace = a.trace;
  r.table = a.table;
  r.bench.baseline_runner = a.baseline_runner;
  r.bench.baseline_build = a.baseline_build;
  k3bench::BenchRequest& b = r.bench;
  b.settings.set("repetitions", std::to_string(a.reps), "--reps");
  b.settings.set("warmup", std::to_string(a.warmup), "--warmup");
  b.settings.set("iterations", "1", "k3tune model");  // one timed run per repetition
  b.settings.set("path", a.path, "--path");
  b.settings.set("check", a.check, "--check");
  b.plan.processes = a.processes;
  b.plan.target_ci = a.target_ci;
  b.timeout_s = a.timeout;
  b.resume = a.resume;
  b.remeasure_disturbed = a.remeasure;
  b.progress = !ctx.quiet;
  b.db_path = ctx.db_path();
  b.command_line = "k3tune model";
  for (const auto* o : cmd.get_options())
    if (o->count() > 0 && o->get_name() != "--help")
      for (const auto& v : o->results()) b.command_line += " " + o->get_name() + " " + v;
  return r;
}

// The comparison, if one was asked for (two builds, or the table against the defaults): the
// judged run and the names of its two sides.
struct ModelComparison {
  std::unique_ptr<k3reports::JudgedRun> judged;
  std::string side_a, side_b;
};

ModelComparison judge_model_comparison(const AppContext& ctx, const ModelArgs& a,
                                       const k3bench::ModelOutcome& out) {
  const std::string rules = ctx.root + "/configs/regression.toml";
  ModelComparison c;
  if (out.bench.builds.size() == 2) {
    c.judged = k3reports::judge_within_run(ctx.db_path(), out.bench.report.run_uuid, rules);
    c.side_a = out.bench.builds[0].build_hash.substr(0, 12);
    c.side_b = out.bench.builds[1].build_hash.substr(0, 12);
  } else if (!a.table.empty()) {
    c.judged = k3reports::judge_table_within_run(ctx.db_path(), out.bench.report.run_uuid, rules);
    c.side_a = "the built-in defaults";
    c.side_b = "table " + a.table;
  }
  return c;
}

void run_model_tests(const AppContext& ctx, const ModelArgs& a, const CLI::App& cmd) {
  const k3bench::ModelRequest r = model_request(ctx, a, cmd);
  const MeasuringPlace place(ctx, a.place);
  const k3bench::ModelOutcome out = run_model(place.target(), ctx.root, r);
  const ModelComparison cmp = judge_model_comparison(ctx, a, out);
  const std::vector<ModelAbRow> ab =
      cmp.judged ? model_ab(ctx.db_path(), *cmp.judged) : std::vector<ModelAbRow>{};
  if (ctx.json) {
    nlohmann::json j = k3bench::model_json(out);
    if (cmp.judged) j["comparison"] = model_ab_json(ab);
    if (out.bench.builds.size() == 2) j["build_pairing"] = out.bench.pairing.to_json();
    std::cout << j.dump(2) << "\n";
  } else {
    std::cout << k3bench::model_markdown(out, place.target().name());
    if (cmp.judged)
      std::cout << model_ab_markdown(ab, cmp.side_a, cmp.side_b,
                                     out.bench.builds.size() == 2 ? out.bench.pairing.text() : "");
  }
  if (out.bench.report.failed_cells() > 0) exit_code() = kCellsFailed;
}

}  // namespace

void add_model_command(CLI::App& app, AppContext& ctx) {
  auto a = std::make_shared<ModelArgs>();
  auto* cmd = app.add_subcommand(
      "model",
      "whole-model prefill (pp) and decode (tg) tokens per second of a model config, "
      "P processes x R repetitions, into the database");
  cmd->add_option("--model", a->model, "configs/models/NAME.toml (or a .toml path)")->required();
  add_place_options(cmd, a->place);
  add_model_test_options(cmd, *a);
  add_model_budget_options(cmd, *a);
  add_model_runner_options(cmd, *a);
  add_model_comparison_options(cmd, *a);
  cmd->add_option("--trace", a->trace,
                  "after the measured tests, one more run of the first test of each kind writes a "
                  "Chrome trace-event file here (ui.perfetto.dev; local and qemu targets)");
  cmd->callback([&ctx, a, cmd] { run_model_tests(ctx, *a, *cmd); });
}

}  // namespace k3cli
