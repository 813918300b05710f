#include "harness/host/bench/model_session.h"

#include <cstdlib>

#include <cmath>
#include <filesystem>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "harness/host/bench/model_runs.h"
#include "harness/host/bench/user_error.h"
#include "harness/host/store/database.h"
#include "harness/host/store/result_reads.h"

namespace k3bench {
namespace {

// Every counted repetition's time of a cell in this run, and the first counted process's runner
// report (its params carry the breakdown, peak RSS and checksum).
struct CellData {
  std::vector<double> ns;
  nlohmann::json runner;
};

CellData cell_data(k3store::Connection& db, const std::string& run_uuid,
                   const std::string& cell_key) {
  CellData d;
  d.ns = k3store::counted_sample_times(db, run_uuid, cell_key);
  if (const auto report = k3store::first_counted_report(db, run_uuid, cell_key))
    d.runner = report->runner;
  return d;
}

std::string mib(std::int64_t bytes) {
  return fmt::format("{:.0f} MiB", double(bytes) / 1048576.0);
}

}  // namespace

namespace {

// One traced run of the model (k3bench --model ... --trace FILE) with the first test of each kind
// the request measured; the same parameters and path, one repetition, no warm-up.
ModelTrace trace_model(const k3targets::Target& target, const ModelRequest& request,
                       const k3model::ModelConfig& config) {
  ModelTrace t;
  t.file = std::filesystem::absolute(request.trace).string();
  const ModelRuns& runs = request.runs;
  std::vector<std::string> args = {"--model", config.file, "--reps", "1",     "--warmup",
                                   "0",       "--trace",   t.file,   "--json"};
  args.insert(
      args.end(),
      {"--pp", std::to_string(runs.prompt_lengths.empty() ? 0 : runs.prompt_lengths.front())});
  args.insert(args.end(),
              {"--tg", std::to_string(runs.decode_steps.empty() ? 0 : runs.decode_steps.front())});
  args.insert(args.end(), {"--tg-prompt", std::to_string(runs.decode_prompt)});
  if (runs.depth > 0) args.insert(args.end(), {"--depth", std::to_string(runs.depth)});
  if (!runs.prefill_then_generate.empty())
    args.insert(args.end(), {"--pg", fmt::format("{},{}", runs.prefill_then_generate.front().first,
                                                 runs.prefill_then_generate.front().second)});
  if (!request.params.empty()) args.insert(args.end(), {"--params", request.params});
  args.insert(args.end(),
              {"--path", request.bench.settings.path, "--cpus", request.bench.settings.cpus,
               "--pool-wait", request.bench.settings.pool_wait});
  if (runs.prompt_lengths.empty() && runs.decode_steps.empty() &&
      runs.prefill_then_generate.empty())
    return t;
  const auto r = target.run(
      args, k3targets::ProcessOptions::with_timeout(
                request.bench.timeout_s > 0 ? request.bench.timeout_s : target.config().timeout_s));
  if (!r.ok()) {
    t.reason = r.failure_reason(target.config().timeout_s);
    return t;
  }
  const auto doc = nlohmann::json::parse(r.out, nullptr, false);
  if (!doc.is_object() || !doc.contains("trace")) {
    t.reason = "the runner wrote no trace";
    return t;
  }
  t.events = doc["trace"].value("events", std::int64_t{0});
  t.dropped = doc["trace"].value("dropped_events", std::int64_t{0});
  for (const auto& res : doc.value("results", nlohmann::json::array()))
    t.tests.push_back(res.value("test", ""));
  return t;
}

}  // namespace

ModelOutcome run_model(const k3targets::Target& target, const std::string& root,
                       const ModelRequest& request) {
  ModelOutcome out;
  try {
    out.config = k3model::load_model_config(
        k3model::resolve_model_path(request.model, root + "/configs/models"));
  } catch (const k3model::ModelConfigError& e) {
    throw UserError(e.what());
  }
  if (request.runs.empty())
    throw UserError("model: no prompt lengths, decode steps or --pg runs to run");
  if (!request.trace.empty() && !target.runs_here())
    throw UserError(
        fmt::format("--trace: the trace is written where the runner runs: a local or "
                    "qemu target (not {})",
                    target.name()));
  if (!request.trace.empty()) {
    const auto dir = std::filesystem::absolute(request.trace).parent_path();
    if (!std::filesystem::is_directory(dir))
      throw UserError(fmt::format("--trace {}: no directory {}", request.trace, dir.string()));
  }
  for (const auto& f : load_published(request.published))
    if (f.model == out.config.id) out.published.push_back(f);
  BenchRequest br = request.bench;
  br.grid = {};
  br.grid.model = request.model;
  br.grid.model_runs = request.runs;
  br.grid.params = request.params;
  if (!request.table.empty()) {
    if (!br.baseline_runner.empty() || !br.baseline_build.empty())
      throw UserError("--table: one comparison at a time (not with --baseline-runner/-build)");
    if (request.table.find(',') != std::string::npos)
      throw UserError(fmt::format("--table {}: a path without commas, please", request.table));
    // The defaults' side must load nothing: a table from the environment would reach both.
    if (const char* env = std::getenv("K3_TUNING_TABLE"); env != nullptr && *env != '\0')
      throw UserError(fmt::format(
          "--table: K3_TUNING_TABLE={} is set, so the defaults' side would load it too; unset it",
          env));
    br.grid.grid = {"table=none," + request.table};
    br.pair_tables = true;
  }
  out.bench = run_bench(target, root, br);

  auto db = k3store::open_database(request.bench.db_path, k3store::OpenMode::kReadOnly);
  for (const auto& c : out.bench.report.cells) {
    ModelRow r;
    std::map<std::string, std::string> shape;
    for (const auto& [key, value] : c.spec.shape.items())
      shape[key] = value.is_string() ? value.get<std::string>() : value.dump();
    r.tokens = model_tokens_per_call(c.spec.op, c.spec.shape);
    r.test = model_test_name(c.spec.op, shape);
    if (c.build < out.bench.builds.size()) r.build = out.bench.builds[c.build].label;
    if (!request.table.empty()) r.build = c.spec.settings.table.empty() ? "defaults" : "table";
    if (!c.skipped.empty()) {
      r.reason = "skipped: " + c.skipped;
    } else if (!c.has_aggregate || !c.aggregate.ok) {
      r.reason = c.aggregate.reason;
    } else {
      const auto& a = c.aggregate;
      r.ok = true;
      r.processes = a.processes;
      r.samples = a.samples;
      r.tps = double(r.tokens) / (*a.mean_ns * 1e-9);
      if (a.ci_low_ns && a.ci_high_ns) {
        r.tps_ci_low = double(r.tokens) / (*a.ci_high_ns * 1e-9);
        r.tps_ci_high = double(r.tokens) / (*a.ci_low_ns * 1e-9);
      }
      const CellData d = cell_data(*db, out.bench.report.run_uuid, c.cell_key);
      double mean = 0, var = 0;
      std::vector<double> tps;
      for (double ns : d.ns) tps.push_back(double(r.tokens) / (ns * 1e-9));
      for (double x : tps) mean += x / double(tps.size());
      for (double x : tps) var += (x - mean) * (x - mean);
      r.tps_stddev = tps.size() > 1 ? std::sqrt(var / double(tps.size() - 1)) : 0.0;
      if (d.runner.is_object() && d.runner.contains("params")) {
        const auto& p = d.runner["params"];
        r.breakdown = p.value("breakdown", nlohmann::json());
        r.peak_rss_bytes = p.value("peak_rss_bytes", std::int64_t{0});
        r.checksum = p.value("logits_checksum", "");
        r.threads = p.value("workers", 0);
        if (p.contains("weights"))
          r.decode_bytes_per_token = p["weights"].value("decode_bytes_per_token", std::int64_t{0});
      }
      if (d.runner.is_object() && d.runner.contains("dispatch"))
        r.path = d.runner["dispatch"].value("path", "");
    }
    out.rows.push_back(std::move(r));
  }
  if (!request.trace.empty()) out.trace = trace_model(target, request, out.config);
  return out;
}

std::string model_markdown(const ModelOutcome& o, const std::string& target) {
  const auto& c = o.config;
  const double gib = double(c.body_params() + c.embedding_params()) * 5.0 / 8.0 / 1073741824.0;
  std::string s = fmt::format(
      "k3tune on this machine (target {}; {} processes x {} repetitions per test, mean of process "
      "means, 95% CI; +- the stddev of all repetitions):\n\n",
      target, o.bench.rounds.min_processes, o.bench.settings.repetitions);
  s += "| model | modelSize | backend | threads | test | t/s | 95% CI | processes |\n";
  s += "|---|---:|---|---:|---|---:|---:|---:|\n";
  for (const auto& r : o.rows) {
    if (!r.ok) {
      s += fmt::format("| {} | {:.2f} GiB | - | - | {} | FAILED: {} | | |\n", c.name, gib, r.test,
                       r.reason);
      continue;
    }
    // No interval below three processes (k3stats::log_interval): words, not "0.00-0.00".
    const std::string interval =
        r.tps_ci_high > 0
            ? fmt::format("{:.2f}-{:.2f}", r.tps_ci_low, r.tps_ci_high)
            : fmt::format("{} process{}: too few", r.processes, r.processes == 1 ? "" : "es");
    s += fmt::format("| {} | {:.2f} GiB | cpu {} | {} | {} | {:.2f} ± {:.2f} | {} | {} |\n", c.name,
                     gib, r.path, r.threads,
                     r.build.empty() ? r.test : r.test + " (" + r.build + ")", r.tps, r.tps_stddev,
                     interval, r.processes);
  }
  if (!o.published.empty()) {
    s += "\nPublished figures from other engines on their own K3 boards (A100 x 8 threads unless "
         "noted; another machine, build and protocol -- NOT measured by k3tune, shown for "
         "orientation only):\n\n";
    s += "| model | test | engine | weights | t/s (published) | source "
         "|\n|---|---|---|---|---:|---|\n";
    for (const auto& f : o.published) {
      s += fmt::format("| {} | {} | {} | {} | {} | {}{} |\n", c.name, f.test, f.engine, f.weights,
                       f.text(), f.citation(), f.note.empty() ? "" : " (" + f.note + ")");
    }
  }
  if (o.trace) {
    if (o.trace->reason.empty())
      s += fmt::format(
          "\nTrace of {} (one untimed-by-the-sweep run, the first repetition of each test): {} "
          "({} events{}; open it in ui.perfetto.dev or chrome://tracing)\n",
          fmt::join(o.trace->tests, ", "), o.trace->file, o.trace->events,
          o.trace->dropped > 0 ? fmt::format(", {} dropped past the cap", o.trace->dropped) : "");
    else
      s += fmt::format("\nTrace: not written ({})\n", o.trace->reason);
  }
  for (const auto& r : o.rows) {
    if (!r.ok || !r.breakdown.is_object()) continue;
    s += fmt::format(
        "\n{}: per-op share of {:.1f} ms per run (ops sum {:.1f} ms: {}); peak RSS {}; "
        "logits checksum {}\n",
        r.test, 1e3 * r.breakdown.value("wall_s_per_call", 0.0),
        1e3 * r.breakdown.value("ops_sum_s_per_call", 0.0), r.breakdown.value("sum_check", ""),
        mib(r.peak_rss_bytes), r.checksum);
    for (const auto& op : r.breakdown["ops"]) {
      s += fmt::format("  {:<12} {:>6.1f}%  {:>10.3f} ms\n", op.value("op", ""),
                       100 * op.value("share", 0.0), 1e3 * op.value("seconds_per_call", 0.0));
    }
  }
  return s;
}

nlohmann::json model_json(const ModelOutcome& o) {
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& r : o.rows) {
    rows.push_back(
        {{"test", r.test},
         {"build", r.build},
         {"tokens", r.tokens},
         {"ok", r.ok},
         {"reason", r.reason},
         {"path", r.path},
         {"threads", r.threads},
         {"processes", r.processes},
         {"samples", r.samples},
         {"tokens_per_s", r.tps},
         {"tokens_per_s_ci95", r.tps_ci_high > 0 ? nlohmann::json{r.tps_ci_low, r.tps_ci_high}
                                                 : nlohmann::json{nullptr, nullptr}},
         {"tokens_per_s_stddev", r.tps_stddev},
         {"breakdown", r.breakdown},
         {"peak_rss_bytes", r.peak_rss_bytes},
         {"decode_bytes_per_token", r.decode_bytes_per_token},
         {"logits_checksum", r.checksum}});
  }
  nlohmann::json published = nlohmann::json::array();
  for (const auto& f : o.published) {
    published.push_back({{"test", f.test},
                         {"engine", f.engine},
                         {"weights", f.weights},
                         {"tokens_per_s_low", f.low},
                         {"tokens_per_s_high", f.high},
                         {"source", f.source},
                         {"earlier_revision", f.earlier_revision},
                         {"note", f.note},
                         {"measured_by", "another party, on another machine (not k3tune)"}});
  }
  nlohmann::json trace = nullptr;
  if (o.trace)
    trace = {{"file", o.trace->file},
             {"events", o.trace->events},
             {"dropped_events", o.trace->dropped},
             {"tests", o.trace->tests},
             {"reason", o.trace->reason}};
  return {{"model", o.config.id},
          {"trace", trace},
          {"run_uuid", o.bench.report.run_uuid},
          {"build_hash", o.bench.builds.empty() ? "" : o.bench.builds.back().build_hash},
          {"results", rows},
          {"published", published}};
}

}  // namespace k3bench
