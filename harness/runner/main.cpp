// k3bench: runs one kernel op x shape x parameter set and prints one JSON document (or a table
// row): every repetition's time, traffic for GB/s and GOPS, dispatch path, parameters used,
// accuracy against the float64 reference, and the environment.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <optional>

#include <benchmark/benchmark.h>
#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include "harness/common/params/param_spec.h"
#include "harness/common/sys/elapsed.h"
#include "harness/runner/call_marks.h"
#include "harness/runner/case_factory.h"
#include "harness/runner/dump.h"
#include "harness/runner/environment.h"
#include "harness/runner/errors.h"
#include "harness/runner/extra_work.h"
#include "harness/runner/facts.h"
#include "harness/runner/kernel_plugin.h"
#include "harness/runner/ime2_counts.h"
#include "harness/runner/measure.h"
#include "harness/runner/model_command.h"
#include "harness/runner/models_dir.h"
#include "harness/runner/op_case.h"
#include "harness/runner/output_checksum.h"
#include "harness/runner/path_option.h"
#include "harness/runner/perf_counters.h"
#include "harness/runner/placement.h"
#include "harness/runner/report.h"
#include "harness/runner/run_settings.h"
#include "harness/runner/selftest.h"
#include "harness/runner/tcm_context.h"
#include "harness/runner/tcm_status.h"
#include "harness/runner/tuning_params.h"
#include "harness/runner/weight_cache.h"
#include "k3k/aligned_buffer.h"
#include "k3k/dispatch.h"

namespace k3runner {
namespace {

constexpr const char* kExitCodesHelp =
    "Exit codes:\n"
    "  0  success (accuracy within bound)\n"
    "  2  usage: bad option, unknown op, missing/unknown shape or parameter key, parameter out of "
    "range\n"
    "  3  unsupported: valid syntax but this binary or CPU cannot run it (K not a multiple of 64,\n"
    "     a size <= 0 or above its limit, more memory than available, a --path not built in or\n"
    "     not supported by the CPU)\n"
    "  4  accuracy failure: the output broke the float64 reference bound (the JSON still prints);\n"
    "     --selftest: an instruction's result differs from its software model\n"
    "  5  internal error (a bug, or an I/O failure writing --dump)\n";

struct Options {
  bool list_ops = false;
  bool json = false;
  bool no_header = false;
  std::string op, shape, params, check = "sample", dump_dir, path = "auto", selftest, table;
  std::string params_b;  // a second parameter set: repetitions alternate the two (measure.h)
  std::string build_b;   // a second build's kernel plugin: repetitions alternate the builds
  MeasureOptions measure;
  std::uint64_t seed = 1;
  double extra_work_ns = 0;
  std::uint64_t extra_work_spins = 0;
  std::string extra_work_sides = "all";
  bool tcm_status = false;
  bool facts = false;
  std::string tcm_force_release, tcm_backend = "auto";
  bool force = false;
  std::string huge_pages = "on";
  ModelCommandOptions model;
};

using Clock = std::chrono::steady_clock;
using k3sys::seconds_since;

void list_ops(bool json) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& op : all_ops()) {
    nlohmann::json o = {{"name", op.name}, {"description", op.description}};
    for (const auto& k : op.shape_keys) o["shape_keys"].push_back(k.to_json());
    o["params"] = nlohmann::json::array();
    for (const auto& p : op.params) o["params"].push_back(p.to_json());
    out.push_back(o);
  }
  if (json) {
    std::cout << out.dump(2) << "\n";
    return;
  }
  for (const auto& o : out) {
    std::cout << fmt::format("{:<20} {}\n", o["name"].get<std::string>(),
                             o["description"].get<std::string>());
    for (const char* group : {"shape_keys", "params"}) {
      for (const auto& k : o[group]) {
        std::string range =
            k.contains("range")     ? fmt::format("[{}, {}]", k["range"][0].get<long long>(),
                                                  k["range"][1].get<long long>())
            : k.contains("choices") ? fmt::format("{{{}}}", fmt::join(k["choices"], "|"))
                                    : "";
        std::cout << fmt::format(
            "    {:<7} {:<12} {:<6} {:<22} default={:<10} {}\n",
            group[0] == 's' ? "shape" : "param", k["name"].get<std::string>(),
            k["type"].get<std::string>(), range,
            k.contains("default") ? k["default"].get<std::string>() : "(required)",
            k["help"].get<std::string>());
      }
    }
  }
}

// The check of one case, with the checksum of the outputs it just computed (a plugin's case
// brings its own, taken inside its build).
Accuracy checked(OpCase& c, bool full) {
  Accuracy a = c.check(full);
  if (a.output_checksum.is_null()) a.output_checksum = output_checksum(c);
  return a;
}

int run_case(const Options& o, Clock::time_point process_start) {
  const OpInfo& op = op_named(o.op);
  const k3k::PathDecision decision = decide_path_option(o.path);
  auto given = parse_kv_list(o.params, "--params");
  const nlohmann::json tuning =
      apply_tuning_table(o.table, op, parse_kv_list(o.shape, "--shape"), decision.path, given);
  CaseInputs in{KeyValues(op.shape_keys, parse_kv_list(o.shape, "--shape"), "--shape", true),
                KeyValues(op.params, given, "--params", false), o.seed, decision.path};
  for (const auto& [flag, value] : {std::pair{"--params-b", &o.params_b}, {"--build-b", &o.build_b}})
    if (!value->empty() && o.extra_work_sides == "abba")
      throw UsageError(fmt::format(
          "{}: alternates the repetitions already; not with --extra-work-sides abba", flag));
  // The second case: the same op, shape, seed and path; parameters not in --params-b are the
  // op's defaults (the table is not consulted: B is what the comparison names explicitly).
  std::optional<CaseInputs> in_b;
  if (!o.params_b.empty() && o.build_b.empty()) {
    in_b = CaseInputs{
        in.shape,
        KeyValues(op.params, parse_kv_list(o.params_b, "--params-b"), "--params-b", false), o.seed,
        decision.path};
  }
  check_case_fits(op.footprint(in.shape, in.params) +
                  (in_b ? op.footprint(in_b->shape, in_b->params) : 0));
  std::unique_ptr<OpCase> c = make_case(op, in), c_b;
  if (in_b) c_b = make_case(op, *in_b);
  // A second build (--build-b): the same op, shape and seed, the path as requested (each build
  // decides "auto" for itself), and the parameters A was given unless --params-b names B's.
  std::unique_ptr<KernelPlugin> plugin;
  if (!o.build_b.empty()) {
    plugin = KernelPlugin::load(o.build_b);
    plugin->configure(run_settings());
    c_b = plugin->make_case(op.name, o.shape, o.params_b.empty() ? k3params::to_kv(nlohmann::json(given)) : o.params_b,
                            o.seed, o.path);
  }

  Result r;
  r.op = op.name;
  // "emulated": the path's instructions ran as software models (IME2 emulation build): the
  // accuracy is real, the timings are not IME2 performance.
  r.dispatch = {{"requested", o.path},
                {"path", c->path()},
                {"reason", decision.reason},
                {"emulated", decision.emulated}};
  r.emulated = decision.emulated;
  r.shape = in.shape.to_json();
  r.params = c->params_used();
  r.tuning = tuning;
  r.path = c->path();
  r.seed = o.seed;
  r.traffic = c->traffic();
  if (c_b) {
    r.params_b = c_b->params_used();
    r.traffic_b = c_b->traffic();
  }
  if (plugin)
    r.build_b = {{"plugin", plugin->file()},
                 {"interface_version", K3BENCH_PLUGIN_INTERFACE_VERSION},
                 {"build", plugin->build()},
                 {"path", c_b->path()},
                 {"dispatch", plugin_dispatch(*c_b)}};
  r.environment = environment_static();
  r.environment["measurement"] = run_settings_json();
  r.environment["readings_before"] = environment_readings();
  const double setup_s = seconds_since(process_start);
  const auto check_start = Clock::now();
  if (o.check != "none") {
    r.accuracy = checked(*c, o.check == "full");
    if (c_b) r.accuracy_b = checked(*c_b, o.check == "full");
  }
  const double check_s = seconds_since(check_start);
  // What the calls decided (a TCM gate, per-call statistics) is in the parameters from here on.
  r.params = c->params_used();
  if (c_b) r.params_b = c_b->params_used();
  // The dump holds the arrays of the checked call with the parameters it ran with; with
  // --check none, those of the last timed call (written after the measurement below).
  auto dump = [&] {
    write_dump(o.dump_dir,
               {{"op", r.op},
                {"shape", r.shape},
                {"params", c->params_used()},
                {"seed", r.seed},
                {"path", r.path}},
               c->dump_arrays());
  };
  if (!o.dump_dir.empty() && o.check != "none") dump();
  const bool accurate = (!r.accuracy || r.accuracy->pass) && (!r.accuracy_b || r.accuracy_b->pass);
  CallMarks marks(o.model.count_marks);
  if (accurate) {
    const ExtraWork extra(o.extra_work_ns, o.extra_work_spins, o.extra_work_sides == "abba");
    const PerfCounters counters;  // after make(): the worker threads exist and are counted too
    r.counters = counters.status_json();
    r.extra_work = extra.to_json();
    MeasureOptions mo = o.measure;
    std::string policy;
    mo.pinned = !pool_options(1, &policy).cpus.empty();
    mo.busy_wait = run_settings().pool_wait == "spin";
    mo.marks = &marks;
    const Measurement m = measure(*c, mo, &counters, &extra, c_b.get());
    r.repetitions = m.repetitions;
    r.calibration = m.calibration;
    r.timing = {{"setup_s", setup_s},
                {"cache_build_s", weight_cache_build_s()},  // part of setup_s: a cold cache's fill
                {"check_s", check_s},
                {"warmup_s", m.calibration.warmup_s},
                {"measured_s", m.measured_s}};
    r.params = c->params_used();  // again: some ops add what the timed calls reported (e.g. TCM
                                  // copy vs compute time; a model's bytes per op)
    r.traffic = c->traffic();
    if (c_b) {
      r.params_b = c_b->params_used();
      r.traffic_b = c_b->traffic();
    }
    if (!o.dump_dir.empty() && o.check == "none") dump();
  }
  r.environment["readings_after"] = environment_readings();
  r.environment["tcm"] = tcm_contexts_json();  // which TCM backend this case used (empty: none)
  if (!r.timing.is_null()) r.timing["total_s"] = seconds_since(process_start);
  r.ime2_instructions = ime2_instruction_counts_json();
  r.count_marks = marks.json();
  if (o.json)
    std::cout << result_json(r).dump(2) << "\n";
  else
    std::cout << result_table(r, !o.no_header);
  if (!accurate) {
    const bool a_failed = !r.accuracy->pass;
    const Accuracy& bad = a_failed ? *r.accuracy : *r.accuracy_b;
    std::cerr << fmt::format(
        "k3bench: accuracy failure: {}{} error/bound ratio {:.3g} (max abs err {:.3g})\n", r.op,
        a_failed ? "" : (plugin ? " (--build-b)" : " (--params-b)"), bad.worst_ratio, bad.max_abs_err);
    return kExitAccuracy;
  }
  return kExitOk;
}

}  // namespace
}  // namespace k3runner

int main(int argc, char** argv) {
  using namespace k3runner;
  const auto process_start = Clock::now();
  Options o;
  CLI::App app{
      "k3bench: run one k3tune kernel op x shape x parameter set and report times, traffic, "
      "accuracy and environment."};
  app.footer(kExitCodesHelp);
  app.add_flag("--list-ops", o.list_ops, "list ops with their shape keys and tunable parameters");
  app.add_flag("--json", o.json, "print JSON (default: a readable table row)");
  app.add_flag("--no-header", o.no_header, "table output without its header line");
  app.add_option("--op", o.op, "op name (see --list-ops)");
  app.add_option("--shape", o.shape, "shape keys, k=v,k=v");
  app.add_option("--params", o.params, "tunable parameters, k=v,k=v (defaults from --list-ops)");
  app.add_option("--params-b", o.params_b,
                 "a second parameter set B, k=v,k=v (the op's defaults for keys not given): the "
                 "repetitions alternate --params (A) and B in pairs A B, B A, ... within this "
                 "process and report their side; summary is A's, summary_b B's (a within-process "
                 "A/B comparison; --reps counts both sides)");
  app.add_option("--build-b", o.build_b,
                 "a second build B: its kernel plugin (libk3bench_plugin.so of that build), loaded "
                 "beside this build in a link namespace of its own; the repetitions alternate this "
                 "build (A) and B in pairs A B, B A, ... within this process, with the parameters A "
                 "was given (or --params-b); summary is A's, summary_b B's, build_b names B's build "
                 "(needs a dynamically linked k3bench)");
  app.add_option("--table", o.table,
                 "tuning table (k3tune tune): parameters not given in --params come from its entry "
                 "for this op, "
                 "path and shape (K3_TUNING_TABLE in the environment does the same)");
  app.add_option("--reps", o.measure.repetitions, "measured repetitions")
      ->check(CLI::Range(1, 100000));
  app.add_option("--warmup", o.measure.warmup, "untimed calls before measuring")
      ->check(CLI::Range(0, 100000));
  app.add_option("--min-time", o.measure.min_time_s,
                 "seconds per repetition (when --iterations is 0)")
      ->check(CLI::Range(0.0, 3600.0));
  app.add_option("--iterations", o.measure.iterations, "fixed calls per repetition (0: automatic)")
      ->check(CLI::Range(0, 1 << 30));
  app.add_option("--seed", o.seed, "seed of the synthetic weights and inputs");
  app.add_option("--check", o.check, "accuracy check: sample (spread rows), full, none")
      ->check(CLI::IsMember({"sample", "full", "none"}));
  app.add_option(
      "--dump", o.dump_dir,
      "write every input (quantised weights, caches as laid out, initial states) and the "
      "outputs of the checked call to DIR, with a manifest of layouts (with --check none: "
      "of the last timed call)");
  app.add_option("--path", o.path,
                 "kernel layer: auto (best available: ime2, rvv, generic), or force one")
      ->check(CLI::IsMember({"auto", "generic", "rvv", "ime2"}));
  app.add_option("--selftest", o.selftest,
                 "run the IME2 instructions on fixed inputs and compare with their software models "
                 "(exit 3: IME2 not built or not usable here)")
      ->check(CLI::IsMember({"ime2"}));
  app.add_flag("--facts", o.facts,
               "describe this runner and machine: environment, default kernel path, IME2 gate, TCM "
               "(with --json: the document k3tune reads)");
  app.add_flag("--tcm-status", o.tcm_status,
               "report the TCM backend and every block's state (stale locks flagged)");
  app.add_option("--tcm-force-release", o.tcm_force_release,
                 "recovery: release TCM blocks left acquired by a dead process (\"all\" stale "
                 "ones, or a list like 0,3)");
  app.add_flag("--force", o.force,
               "with --tcm-force-release: also take blocks held by a live thread");
  app.add_option("--tcm-backend", o.tcm_backend,
                 "TCM backend for --tcm-status/--tcm-force-release and --model --tcm")
      ->check(CLI::IsMember({"auto", "real", "emulated", "off"}));
  auto* model_opt =
      app.add_option("--model", o.model.model,
                     "whole-model run: NAME (configs/models/NAME.toml) or a .toml file; "
                     "prefill --pp and decode --tg tokens per second, per-op breakdown");
  app.add_option("--models-dir", o.model.models_dir, "where --model NAME is looked up")
      ->default_str("$K3BENCH_MODELS_DIR, else the source tree's configs/models");
  app.add_option("--pp", o.model.pp, "--model: prompt tokens of the prefill test (0: none)")
      ->capture_default_str();
  app.add_option("--tg", o.model.tg, "--model: decode steps of the decode test (0: none)")
      ->capture_default_str();
  app.add_option("--tg-prompt", o.model.tg_prompt, "--model: prompt tokens before the decode test")
      ->capture_default_str();
  app.add_option("--depth", o.model.depth,
                 "--model: tokens already in the KV cache before every test, prefilled untimed "
                 "(llama-bench -d; the decode test's prompt)")
      ->capture_default_str();
  app.add_option_function<std::vector<int>>(
         "--pg",
         [&o](const std::vector<int>& v) {
           o.model.pg_pp = v.at(0);
           o.model.pg_tg = v.at(1);
         },
         "--model: P,G: a prefill of P tokens then G decode steps on the same cache, timed as one "
         "test (MNN llm_bench -pg)")
      ->expected(2)
      ->delimiter(',');
  app.add_option("--trace", o.model.trace,
                 "--model: write a Chrome trace-event file (ui.perfetto.dev) of the first measured "
                 "repetition of each test: kernel calls by layer, every worker's share");
  app.add_option("--context-fill", o.model.context_fill,
                 "--model: how the context before a test is made: prefill (the forward, untimed) "
                 "or synthetic (seeded values in the caches and states at once; for instruction "
                 "counts, which do not depend on them)")
      ->check(CLI::IsMember({"prefill", "synthetic"}))
      ->capture_default_str();
  app.add_option("--tcm", o.model.tcm,
                 "--model: the decode Linears' TCM pipeline: auto (each matrix's gate decides; "
                 "real TCM only), on (the emulated backend too, size gates skipped), off")
      ->check(CLI::IsMember({"auto", "on", "off"}))
      ->capture_default_str();
  app.add_flag("--count-marks", o.model.count_marks,
               "mark calls for the instruction counter: --op: every call of the case (warm-up "
               "and timed) is its own region; --model: every kernel call of the timed forwards "
               "(k3tune count --model; needs --reps 1 --warmup 0). K3BENCH_COUNT_MARKS=1 does the "
               "same (k3tune count sets it)")
      ->envname("K3BENCH_COUNT_MARKS");
  app.add_flag("--check-forward", o.model.check_forward,
               "--model: first compare the forward pass with the float64 reference (small models)");
  RunSettings& rs = run_settings();
  app.add_option(
         "--cpus", rs.cpus,
         "thread placement: auto (the A100 CPUs on a K3, else unpinned), none, or a list like 0-1 "
         "(K3BENCH_CPUS overrides)")
      ->capture_default_str();
  app.add_option("--pool-wait", rs.pool_wait, "idle workers: spin (then park) or park at once")
      ->check(CLI::IsMember({"spin", "park"}))
      ->capture_default_str();
  app.add_option("--huge-pages", o.huge_pages, "2 MiB aligned, THP-advised buffers of >= 2 MiB")
      ->check(CLI::IsMember({"on", "off"}))
      ->capture_default_str();
  app.add_option("--weight-load", rs.weight_load,
                 "decode weight copies: mmap (from the weight cache, shared) or read (made in this "
                 "process)")
      ->check(CLI::IsMember({"read", "mmap"}))
      ->capture_default_str();
  app.add_option(
         "--extra-work-ns", o.extra_work_ns,
         "add a calibrated busy loop of about N ns after every timed call (statistics self-check; "
         "K3BENCH_EXTRA_WORK_NS plants it where options cannot be passed: k3tune count, a farm's "
         "env)")
      ->envname("K3BENCH_EXTRA_WORK_NS")
      ->check(CLI::Range(0.0, 1e9));
  app.add_option("--extra-work-spins", o.extra_work_spins,
                 "add exactly N steps of the busy loop after every timed call, uncalibrated: a "
                 "fixed number "
                 "of instructions for instruction-count tests (K3BENCH_EXTRA_WORK_SPINS)")
      ->envname("K3BENCH_EXTRA_WORK_SPINS")
      ->check(CLI::Range(std::uint64_t{0}, std::uint64_t{1} << 40));
  app.add_option("--extra-work-sides", o.extra_work_sides,
                 "all: the extra work after every timed call; abba: repetitions alternate A "
                 "(without) and B (with) in pairs A B, B A, ... and report their side, the "
                 "within-process comparison of the statistics self-check")
      ->check(CLI::IsMember({"all", "abba"}))
      ->capture_default_str();
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    std::cout << app.help();
    return kExitOk;
  } catch (const CLI::ParseError& e) {
    std::cerr << "k3bench: " << e.what() << "\n";
    return kExitUsage;
  }
  rs.huge_pages = o.huge_pages == "on";
  k3k::set_huge_page_buffers(rs.huge_pages);  // before any case allocates
  int gb_argc = 1;
  benchmark::Initialize(&gb_argc, argv);
  try {
    place_main_thread();  // before the IME2/RVV gates read the CPU (see placement.h)
    if (o.list_ops) {
      list_ops(o.json);
      return kExitOk;
    }
    if (!o.selftest.empty()) return run_selftest(o.selftest, o.json);
    if (o.facts) {
      if (o.build_b.empty()) return run_facts(o.json);
      // The host's probe before a paired build A/B: this runner loads the plugin (or refuses it
      // in one line, exit 2) and says whose build it is.
      const auto plugin = KernelPlugin::load(o.build_b);
      return run_facts(o.json, {{"plugin", plugin->file()},
                                {"interface_version", K3BENCH_PLUGIN_INTERFACE_VERSION},
                                {"build", plugin->build()}});
    }
    if (o.tcm_status) return run_tcm_status(o.tcm_backend, o.json);
    if (!o.tcm_force_release.empty())
      return run_tcm_force_release(o.tcm_backend, o.tcm_force_release, o.force, o.json);
    if (model_opt->count() > 0) {
      if (!o.params_b.empty())
        throw UsageError("--params-b: one op's cases only, not with --model");
      if (!o.build_b.empty())
        throw UsageError("--build-b: one op's cases only, not with --model");
      ModelCommandOptions m = o.model;
      if (m.models_dir.empty()) {
        const char* env = std::getenv("K3BENCH_MODELS_DIR");
        m.models_dir = env != nullptr ? env : k3runner::default_models_dir();
      }
      // --reps / --warmup keep their meaning: timed and untimed runs of each test.
      if (app.get_option("--reps")->count() > 0) m.reps = o.measure.repetitions;
      if (app.get_option("--warmup")->count() > 0) m.warmup = o.measure.warmup;
      m.params = o.params;
      m.path = o.path;
      m.table = o.table;
      m.seed = o.seed;
      m.json = o.json;
      m.tcm_backend = o.tcm_backend;
      return run_model_command(m);
    }
    if (o.op.empty()) throw UsageError("--op is required (or --list-ops, or --model); see --help");
    return run_case(o, process_start);
  } catch (const UsageError& e) {
    std::cerr << "k3bench: " << e.what() << "\n";
    return kExitUsage;
  } catch (const UnsupportedShape& e) {
    std::cerr << "k3bench: unsupported: " << e.what() << "\n";
    return kExitUnsupported;
  } catch (const std::exception& e) {
    std::cerr << "k3bench: internal error: " << e.what() << "\n";
    return kExitInternal;
  }
}
