#include "harness/runner/model_command.h"

#include <sys/resource.h>

#include <chrono>
#include <cmath>
#include <iostream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "harness/common/model/model_config.h"
#include "harness/runner/environment.h"
#include "harness/runner/errors.h"
#include "harness/runner/model/count_marks.h"
#include "harness/runner/model/forward.h"
#include "harness/runner/model/model_check.h"
#include "harness/runner/model/model_report.h"
#include "harness/runner/model/model_tuning.h"
#include "harness/runner/model/model_weights.h"
#include "harness/runner/model/trace_recorder.h"
#include "harness/runner/model_sizes.h"
#include "harness/runner/op_case.h"
#include "harness/runner/path_option.h"
#include "harness/runner/tcm_context.h"
#include "harness/runner/tuning_params.h"
#include "harness/runner/weight_cache.h"
#include "k3k/dispatch.h"
#include "k3k/tuning.h"

namespace k3runner {
namespace {

using Clock = std::chrono::steady_clock;
// About 100 bytes an event in the file: a trace of at most ~50 MB opens in a browser.
constexpr std::int64_t kTraceMaxEvents = 500'000;
double since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

struct TestResult {
  std::string name;  // "pp512", "tg128", "pp512+tg128", "@d4096" appended at a depth
  std::int64_t tokens = 0;
  std::int64_t depth = 0;               // tokens in the caches before the timed calls
  std::vector<double> seconds;          // per repetition
  std::vector<double> prefill_seconds;  // pp+tg: the prefill part of each repetition
  model::OpTimer ops;                   // summed over the repetitions
  std::vector<std::string> checksums;   // per repetition
  nlohmann::json json() const {
    std::vector<double> tps;
    for (double s : seconds) tps.push_back(double(tokens) / s);
    double mean = 0, var = 0;
    for (double x : tps) mean += x / double(tps.size());
    for (double x : tps) var += (x - mean) * (x - mean);
    const double sd = tps.size() > 1 ? std::sqrt(var / double(tps.size() - 1)) : 0.0;
    double wall = 0;
    for (double s : seconds) wall += s;
    bool same = true;
    for (const auto& c : checksums) same = same && c == checksums.front();
    nlohmann::json j = {
        {"test", name},
        {"tokens", tokens},
        {"depth", depth},
        {"seconds", seconds},
        {"tokens_per_s", tps},
        {"mean_tokens_per_s", mean},
        {"stddev_tokens_per_s", sd},
        {"ms_per_token", 1e3 * wall / double(tokens * std::int64_t(seconds.size()))},
        {"logits_checksum", checksums.empty() ? "" : checksums.front()},
        {"identical_logits_every_repetition", same},
        {"breakdown", model::breakdown_json(ops, wall, static_cast<std::int64_t>(seconds.size()))},
        {"bytes_per_token",
         model::traffic_json(ops.total_bytes(), double(tokens) * double(seconds.size()))}};
    if (!prefill_seconds.empty()) {
      std::vector<double> decode_seconds;
      for (std::size_t i = 0; i < seconds.size(); ++i)
        decode_seconds.push_back(seconds[i] - prefill_seconds[i]);
      j["prefill_seconds"] = prefill_seconds;
      j["decode_seconds"] = decode_seconds;
    }
    return j;
  }
};

// Brings the caches to `depth` tokens (untimed), in the forward's prefill batches, or with seeded
// values at once (--context-fill synthetic).
void fill_context(model::Forward& fwd, std::int64_t depth, std::int64_t vocab, std::uint64_t seed,
                  bool synthetic) {
  if (synthetic) return fwd.fill_synthetic(depth, seed);
  fwd.reset();
  if (depth > 0) fwd.prefill_in_batches(model::prompt_tokens(depth, vocab, seed));
}

std::string at_depth(std::string name, int depth) {
  return depth > 0 ? name + "@d" + std::to_string(depth) : name;
}

// One timed test. `body(timed, sum)` calls the forward through `timed`, which times each call
// (the forward and its greedy choice) and hands back the logits; the checksum is taken outside
// the timed calls (hashing a 152k-entry logit vector costs ~0.6 ms, 2% of a small model's decode
// step). The forward's timer is cleared before each run.
template <typename Prepare, typename Body>
void repeat(model::Forward& fwd, TestResult& r, int warmup, int reps, Prepare&& prepare,
            Body&& body) {
  model::TraceRecorder* trace = fwd.timer().trace();
  if (trace != nullptr) trace->begin_test(r.name);
  model::CountMarks* marks = fwd.timer().count_marks();
  if (marks != nullptr) marks->begin_test(r.name);
  for (int i = 0; i < warmup + reps; ++i) {
    prepare();
    fwd.timer().clear();
    if (trace != nullptr) trace->record(i == warmup);  // the first measured repetition only
    model::LogitsChecksum sum;
    double s = 0;
    auto timed = [&s, marks](auto&& call) {
      const auto t0 = Clock::now();
      if (marks != nullptr) marks->enter_forward();
      const std::span<const float> logits = call();
      if (marks != nullptr) marks->leave_forward();
      s += since(t0);
      return logits;
    };
    body(timed, sum);
    if (trace != nullptr) trace->record(false);
    if (i < warmup) continue;
    r.seconds.push_back(s);
    r.ops.add(fwd.timer());
    r.checksums.push_back(sum.hex());
  }
}

std::string table(const k3model::ModelConfig& c, const nlohmann::json& doc) {
  std::string out = fmt::format(
      "| model | modelSize | backend | threads | test | t/s |\n|---|---:|---|---:|---|---:|\n");
  const double gib = doc["weights"]["bytes"].get<double>() / 1073741824.0;
  for (const auto& t : doc["results"]) {
    out += fmt::format("| {} | {:.2f} GiB | cpu {} | {} | {} | {:.2f} ± {:.2f} |\n", c.name, gib,
                       doc["path"].get<std::string>(), doc["params"]["workers"].get<int>(),
                       t["test"].get<std::string>(), t["mean_tokens_per_s"].get<double>(),
                       t["stddev_tokens_per_s"].get<double>());
  }
  for (const auto& t : doc["results"]) {
    if (!t.contains("prefill_seconds")) continue;
    double pre = 0, dec = 0;
    for (double x : t["prefill_seconds"]) pre += x;
    for (double x : t["decode_seconds"]) dec += x;
    const double runs = static_cast<double>(t["prefill_seconds"].size());
    out += fmt::format("{}: prefill {:.1f} ms, then generation {:.1f} ms per run\n",
                       t["test"].get<std::string>(), 1e3 * pre / runs, 1e3 * dec / runs);
  }
  for (const auto& t : doc["results"]) {
    const auto& b = t["breakdown"];
    out +=
        fmt::format("\n{}: per-op share of {:.1f} ms per run (ops sum {:.1f} ms, {})\n",
                    t["test"].get<std::string>(), 1e3 * b["wall_s_per_call"].get<double>(),
                    1e3 * b["ops_sum_s_per_call"].get<double>(), b["sum_check"].get<std::string>());
    for (const auto& o : b["ops"]) {
      out += fmt::format("  {:<12} {:>6.1f}%  {:>10.3f} ms\n", o["op"].get<std::string>(),
                         100 * o["share"].get<double>(), 1e3 * o["seconds_per_call"].get<double>());
    }
  }
  out += fmt::format(
      "\npeak RSS {:.0f} MiB (weights {:.0f} MiB, generated in {:.1f} s); decode streams {:.1f} "
      "MiB per token\n",
      doc["peak_rss_bytes"].get<double>() / 1048576.0,
      doc["weights"]["bytes"].get<double>() / 1048576.0,
      doc["weights"]["generation_s"].get<double>(),
      doc["weights"]["decode_bytes_per_token"].get<double>() / 1048576.0);
  for (const auto& t : doc["results"])
    out += fmt::format("logits checksum {}: {}\n", t["test"].get<std::string>(),
                       t["logits_checksum"].get<std::string>());
  if (doc.contains("forward_check"))
    out += "forward check: " + doc["forward_check"]["summary"].get<std::string>() + "\n";
  if (doc.contains("trace")) {
    const auto& t = doc["trace"];
    out += fmt::format(
        "trace: {} ({} events{}, {}; open in ui.perfetto.dev or chrome://tracing)\n",
        t["file"].get<std::string>(), t["events"].get<std::int64_t>(),
        t["dropped_events"].get<std::int64_t>() > 0
            ? fmt::format(", {} past the cap dropped", t["dropped_events"].get<std::int64_t>())
            : "",
        t["sampling"].get<std::string>());
  }
  return out;
}

}  // namespace

namespace {

// A tuning table (--table, or K3_TUNING_TABLE): the Linear tilings its entries give this model's
// shapes (prefill at --pp tokens), decided once before any timing, as an engine decides at load.
// Null when no table was asked for; otherwise the table, whether it was loaded (or why not) and
// the entry each tuned shape uses.
nlohmann::json apply_model_tuning(const ModelCommandOptions& o, const k3model::ModelConfig& config,
                                  k3k::KernelPath path, model::ModelParams& mp) {
  nlohmann::json out = load_tuning_table_report(o.table);
  if (out.is_null()) return out;
  nlohmann::json used = nlohmann::json::object();
  if (const k3k::TuningTable* table = k3k::active_tuning_table())
    used = model::apply_table_to_linears(*table, config, path, o.pp, mp);
  out["entries"] = used;
  return out;
}

}  // namespace

int run_model_command(const ModelCommandOptions& o) {
  k3model::ModelConfig config;
  try {
    config = k3model::load_model_config(k3model::resolve_model_path(o.model, o.models_dir));
  } catch (const k3model::ModelConfigError& e) {
    throw UsageError(e.what());
  }
  const bool pg = o.pg_pp > 0 || o.pg_tg > 0;
  if (o.pp < 0 || o.tg < 0 || o.tg_prompt < 1 || o.reps < 1 || o.warmup < 0 ||
      (o.pp == 0 && o.tg == 0 && !pg))
    throw UsageError(
        "--pp/--tg: give a prompt length and/or decode steps (>= 0, not both 0), --reps >= 1");
  if (o.depth < 0) throw UsageError("--depth: tokens in the cache before each test, >= 0");
  if (o.count_marks && (o.reps != 1 || o.warmup != 0))
    throw UsageError("--count-marks: one repetition and no warm-up (--reps 1 --warmup 0)");
  if (pg && (o.pg_pp < 1 || o.pg_tg < 1))
    throw UsageError("--pg: P,G with a prompt of P >= 1 tokens and G >= 1 decode steps");
  const OpInfo* op = find_op("model_pp");
  const KeyValues params(op->params, parse_kv_list(o.params, "--params"), "--params", false);
  const k3k::PathDecision decision = decide_path_option(o.path);
  const std::int64_t weights_est = (config.body_params() + config.embedding_params()) * 5 / 8;
  const long long avail = available_memory_bytes();
  if (avail > 0 && weights_est > avail * 8 / 10)
    throw UnsupportedShape(
        fmt::format("--model {}: its weights need about {:.1f} GiB, {:.1f} GiB available",
                    config.id, weights_est / 1073741824.0, avail / 1073741824.0));
  // Refused before the weights are generated (seconds to minutes for a real model).
  if (o.check_forward && config.body_params() + config.embedding_params() > 50'000'000)
    throw UsageError(
        "--check-forward: the float64 forward is for small models (under 50M weights)");
  if (o.check_forward && decision.path == k3k::KernelPath::kIme2)
    throw UnsupportedShape(
        "--check-forward: the reference reads kRowTile32 weights (use --path rvv)");
  const ModelRunSize size = model_run_size(o);
  const bool f32_cache = params.text("kv_dtype") == "f32";
  check_model_run_size(config, size, f32_cache ? 4 : 2, weights_est, avail);
  k3k::WorkerPool& pool = pool_of_size(static_cast<int>(params.integer("workers")));
  model::ModelParams mp;
  mp.kv_dtype = f32_cache ? k3k::KvDtype::f32 : k3k::KvDtype::f16;
  mp.gdn_prefill.chunk = static_cast<int>(params.integer("gdn_chunk"));
  const nlohmann::json tuning = apply_model_tuning(o, config, decision.path, mp);
  // The decode Linears' TCM pipeline: a workspace on the backend asked for (each matrix's gate
  // decides, once, when the forward is built); on: the emulated backend is allowed and the size
  // gates are skipped (to see the pipeline where no TCM is).
  nlohmann::json tcm_doc = {{"use", o.tcm}};
  if (o.tcm != "off") {
    const TcmContext& tcm = tcm_context(o.tcm_backend);
    mp.tcm_workspace = tcm_workspace(tcm, pool);
    mp.tcm_decode.use = o.tcm == "on" ? k3k::TcmUse::kOn : k3k::TcmUse::kAuto;
    tcm_doc["backend"] = tcm.tcm != nullptr ? k3k::tcm::to_string(tcm.tcm->backend()) : "off";
    tcm_doc["reason"] = tcm.reason;
  }

  nlohmann::json doc;
  doc["schema"] = "k3bench.model/1";
  doc["model"] = {{"name", config.name},
                  {"id", config.id},
                  {"file", config.file},
                  {"source", config.source},
                  {"dims", config.shape_values()}};
  doc["path"] = k3k::to_string(decision.path);
  doc["dispatch"] = {{"requested", o.path},
                     {"path", k3k::to_string(decision.path)},
                     {"reason", decision.reason},
                     {"emulated", decision.emulated}};
  doc["params"] = {{"workers", pool.size()},
                   {"kv_dtype", k3k::to_string(mp.kv_dtype)},
                   {"gdn_chunk", mp.gdn_prefill.chunk},
                   {"seed", o.seed},
                   {"repetitions", o.reps},
                   {"warmup", o.warmup},
                   {"tg_prompt", o.tg_prompt},
                   {"depth", o.depth}};
  if (!tuning.is_null()) doc["tuning"] = tuning;
  doc["params"]["context_fill"] = o.context_fill;
  doc["environment"] = environment_static();

  const auto gen0 = Clock::now();
  const model::ModelWeights weights = cached_model_weights(
      config, {static_cast<std::uint64_t>(params.integer("weight_seed")), 0}, decision.path, pool);
  doc["weights"] = {{"bytes", weights.bytes()},
                    {"decode_bytes_per_token", weights.decode_bytes_per_token()},
                    {"generation_s", since(gen0)}};
  if (o.check_forward) {
    const auto c = model::check_forward(config, weights, decision.path, pool, mp,
                                        std::max(1, std::min(o.pp, 64)), 8, o.seed);
    doc["forward_check"] = {{"pass", c.pass},
                            {"steps", c.steps},
                            {"err_quantized", c.err_quantized},
                            {"err_unquantized", c.err_unquantized},
                            {"argmax_mismatches", c.argmax_mismatches},
                            {"summary", c.summary()}};
  }
  const int tg_prompt = o.depth > 0 ? o.depth : o.tg_prompt;
  model::Forward fwd(config, weights, mp, decision.path, pool, size.batch, size.capacity);
  doc["state_bytes"] = fwd.state_bytes();
  const auto [tcm_on, linears] = fwd.tcm_linears();
  tcm_doc["decode_linears_on_tcm"] = tcm_on;
  tcm_doc["decode_linears"] = linears;
  doc["tcm"] = tcm_doc;
  doc["results"] = nlohmann::json::array();
  // The trace watches the caller's kernel calls (the timer) and the workers' regions (the pool).
  std::unique_ptr<model::TraceRecorder> trace;
  if (!o.trace.empty()) {
    trace = std::make_unique<model::TraceRecorder>(pool.size(), kTraceMaxEvents);
    fwd.timer().set_trace(trace.get());
    pool.set_observer(trace.get());
  }
  model::CountMarks marks;
  if (o.count_marks) fwd.timer().set_count_marks(&marks);
  const bool synthetic = o.context_fill == "synthetic";
  if (o.pp > 0) {
    TestResult r;
    r.name = at_depth(fmt::format("pp{}", o.pp), o.depth);
    r.tokens = o.pp;
    r.depth = o.depth;
    const auto prompt = model::prompt_tokens(o.pp, config.vocab, o.seed);
    repeat(
        fwd, r, o.warmup, o.reps, [&] { fill_context(fwd, o.depth, config.vocab, o.seed + 2, synthetic); },
        [&](auto& timed, model::LogitsChecksum& sum) {
          sum.add(timed([&] { return fwd.prefill(prompt); }));
        });
    doc["results"].push_back(r.json());
  }
  if (o.tg > 0) {
    TestResult r;
    r.name = at_depth(fmt::format("tg{}", o.tg), o.depth);
    r.tokens = o.tg;
    r.depth = tg_prompt;
    repeat(
        fwd, r, o.warmup, o.reps, [&] { fill_context(fwd, tg_prompt, config.vocab, o.seed + 1, synthetic); },
        [&](auto& timed, model::LogitsChecksum& sum) {
          for (int i = 0; i < o.tg; ++i) sum.add(timed([&] { return fwd.decode(fwd.argmax()); }));
        });
    doc["results"].push_back(r.json());
  }
  if (pg) {
    // One prompt then its generation on the same caches, timed as one: tokens = P + G (the
    // llama-bench convention), with the prefill's share of each repetition alongside. The prompt
    // is the decode test's and the checksum covers the generated steps, so at depth 0 it equals
    // that of --tg G --tg-prompt P.
    TestResult r;
    r.name = at_depth(fmt::format("pp{}+tg{}", o.pg_pp, o.pg_tg), o.depth);
    r.tokens = o.pg_pp + o.pg_tg;
    r.depth = o.depth;
    const auto prompt = model::prompt_tokens(o.pg_pp, config.vocab, o.seed + 1);
    std::vector<double> prefill_s;
    repeat(
        fwd, r, o.warmup, o.reps, [&] { fill_context(fwd, o.depth, config.vocab, o.seed + 2, synthetic); },
        [&](auto& timed, model::LogitsChecksum& sum) {
          const auto t0 = Clock::now();
          timed([&] { return fwd.prefill(prompt); });
          prefill_s.push_back(since(t0));
          for (int i = 0; i < o.pg_tg; ++i)
            sum.add(timed([&] { return fwd.decode(fwd.argmax()); }));
        });
    // The warm-up repetitions come first: keep the measured ones' prefill times.
    r.prefill_seconds.assign(prefill_s.end() - static_cast<std::ptrdiff_t>(r.seconds.size()),
                             prefill_s.end());
    doc["results"].push_back(r.json());
  }
  if (trace) {
    pool.set_observer(nullptr);
    fwd.timer().set_trace(nullptr);
    try {
      trace->write(o.trace);
    } catch (const std::runtime_error& e) {
      throw UsageError(e.what());
    }
    doc["trace"] = {{"file", o.trace},
                    {"events", trace->kept()},
                    {"dropped_events", trace->dropped()},
                    {"sampling", "the first measured repetition of each test"}};
  }
  if (o.count_marks) {
    fwd.timer().set_count_marks(nullptr);
    doc["count_marks"] = marks.json();
  }
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  doc["peak_rss_bytes"] = static_cast<std::int64_t>(ru.ru_maxrss) * 1024;
  if (o.json)
    std::cout << doc.dump(2) << "\n";
  else
    std::cout << table(config, doc);
  if (doc.contains("forward_check") && !doc["forward_check"]["pass"].get<bool>()) {
    std::cerr << "k3bench: forward check failed: "
              << doc["forward_check"]["summary"].get<std::string>() << "\n";
    return kExitAccuracy;
  }
  return kExitOk;
}

}  // namespace k3runner
