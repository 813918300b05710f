// `k3tune model` as a library call: a model's whole-model cells (prefill at each prompt length,
// decode after a short prompt) measured by the sweep like any bench cells -- P processes x R
// repetitions, interleaved rounds, every sample in the database (cells with op model_pp /
// model_tg; the per-op breakdown, peak RSS and logits checksum in each process's runner_json) --
// and its llm_bench-style table, with the published K3 figures of other engines beside it.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/host/bench/bench_session.h"
#include "harness/common/model/model_config.h"
#include "harness/host/bench/published.h"

namespace k3bench {

struct ModelRequest {
  std::string model;  // NAME (configs/models) or a .toml path
  ModelRuns runs{{64, 128, 256, 512, 1024}, {128}, 1, 0, {}};
  std::string params;     // model_pp / model_tg parameters (workers, kv_dtype, gdn_chunk)
  BenchRequest bench;     // settings, process plan, timeout, resume, db, progress
  std::string published;  // configs/published/k3.toml ("" : none)
  // After the measured cells: one more runner process, untimed by the sweep, that writes a Chrome
  // trace-event file of the first of each kind of test (k3bench --model --trace) to this path on
  // this machine ("" : none; local and qemu targets only).
  std::string trace;
  // A tuning table measured against the runner's built-in defaults: every test twice, with
  // `--table` and without, in the same interleaved rounds (a local or qemu target; "" : none).
  std::string table;
};

// What the traced process wrote (ModelRequest::trace).
struct ModelTrace {
  std::string file;
  std::int64_t events = 0, dropped = 0;
  std::vector<std::string> tests;
  std::string reason;  // why there is no trace ("" : written)
};

struct ModelRow {
  std::string test;  // "pp512", "tg128"
  std::string build;  // "" for one build; "baseline" / "candidate" in an A/B; "defaults" /
                      // "table" with ModelRequest::table
  std::int64_t tokens = 0;
  bool ok = false;
  std::string reason;
  int processes = 0, samples = 0;
  double tps = 0;                          // tokens / mean of the process means
  double tps_ci_low = 0, tps_ci_high = 0;  // from the 95% CI of the mean time
  double tps_stddev = 0;     // sample stddev of every repetition's tokens/s (llm_bench's +-)
  nlohmann::json breakdown;  // per-op shares (first counted process)
  std::int64_t peak_rss_bytes = 0;
  std::int64_t decode_bytes_per_token = 0;
  std::string checksum;
  std::string path;
  int threads = 0;
};

struct ModelOutcome {
  BenchOutcome bench;
  k3model::ModelConfig config;
  std::vector<ModelRow> rows;
  std::vector<PublishedFigure> published;  // this model's figures only
  std::optional<ModelTrace> trace;
};

ModelOutcome run_model(const k3targets::Target& target, const std::string& root,
                       const ModelRequest& request);

// llm_bench's table (| model | modelSize | backend | threads | test | t/s |) with our 95% CI and
// processes, then the published figures in their own table, then the per-op breakdown.
std::string model_markdown(const ModelOutcome& outcome, const std::string& target);
nlohmann::json model_json(const ModelOutcome& outcome);

}  // namespace k3bench
