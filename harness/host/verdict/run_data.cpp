#include "harness/host/verdict/run_data.h"

#include <map>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "harness/host/store/result_reads.h"
#include "harness/host/verdict/value_text.h"
#include "harness/host/verdict/verdict_error.h"

namespace k3verdict {
namespace {

// Measurement settings that change what is measured; the others (repetitions, warm-up, time per
// repetition, fixed call count, accuracy check) change only how precisely.
// table_sha256, not the table's path: the same table copied elsewhere is the same configuration.
const char* const kIdentitySettings[] = {"path",        "cpus",          "pool_wait",   "huge_pages",
                                         "weight_load", "extra_work_ns", "table_sha256"};

void load_builds(k3store::Connection& db, RunData& r) {
  std::vector<std::pair<std::string, std::string>> hashes;  // (hash, label)
  if (r.settings.contains("builds") && r.settings["builds"].is_array()) {
    for (const auto& b : r.settings["builds"])
      hashes.emplace_back(b.value("build_hash", ""), b.value("label", ""));
  }
  if (hashes.empty()) hashes.emplace_back(r.build_hash, "");
  for (const auto& [hash, label] : hashes) {
    BuildInfo b;
    b.build_hash = hash;
    b.label = label;
    if (const auto found = k3store::find_build(db, hash)) {
      b.variant = found->variant;
      b.binary_path = found->binary_path;
      b.compiler = found->compiler;
      b.flags = found->flags;
      b.cmake_options = found->cmake_options_json;
      b.source_revision = found->source_revision;
      b.source_dirty = found->source_dirty;
      b.recorded_by = found->recorded_by;
      b.created_at = found->created_at;
    }
    r.builds.push_back(b);
  }
}

void load_environment(k3store::Connection& db, RunData& r) {
  const auto report = k3store::first_process_report(db, r.run_uuid);
  if (!report) return;
  const auto& j = report->runner;
  if (!j.is_object() || !j.contains("environment")) return;
  r.environment = j["environment"];
  r.cpu_model = r.environment.value("cpu_model", "");
  if (r.environment.contains("marchid") && r.environment["marchid"].is_string())
    r.marchid = r.environment["marchid"].get<std::string>();
  if (r.environment.contains("build") && r.environment["build"].is_object())
    r.arch = r.environment["build"].value("target_arch", "");
}

// Counted process means of every aggregated cell, in round order: processes of this run (or of
// the interrupted runs a resumed cell adopted), leaving out disturbed ones when the sweep did.
void load_process_means(k3store::Connection& db, RunData& r,
                        std::map<std::string, CellFigures*>& by_cell) {
  for (const auto& m : k3store::counted_process_means(db, r.run_uuid)) {
    auto it = by_cell.find(m.cell_key);
    if (it == by_cell.end()) continue;
    it->second->process_rounds.push_back(m.process_index);
    it->second->process_means.push_back(m.mean_ns);
  }
}

// The runner's accuracy block and work per call, from the cell's accuracy-checked process (the
// inputs are a function of the seed, so any run's check of the same cell key says the same).
void load_runner_facts(k3store::Connection& db, RunData& r, CellFigures& c) {
  const auto report = k3store::checked_process_report(db, c.cell_key, r.run_uuid);
  if (!report) return;
  c.path = report->path;
  const auto& j = report->runner;
  if (!j.is_object()) return;
  if (j.contains("accuracy") && j["accuracy"].is_object()) {
    const auto& a = j["accuracy"];
    if (a.contains("worst_error_to_bound") && a["worst_error_to_bound"].is_number())
      c.error_to_bound = a["worst_error_to_bound"].get<double>();
    if (a.contains("max_abs_err") && a["max_abs_err"].is_number())
      c.max_abs_err = a["max_abs_err"].get<double>();
    if (a.contains("pass") && a["pass"].is_boolean()) c.accuracy_pass = a["pass"].get<bool>();
    if (a.contains("output_checksum") && a["output_checksum"].is_object())
      c.output_checksum = a["output_checksum"].value("fnv1a64", "");
  }
  if (j.contains("traffic") && j["traffic"].is_object()) {
    const auto& t = j["traffic"];
    const double bytes = t.value("weight_bytes", 0.0) + t.value("activation_bytes", 0.0);
    if (bytes > 0) c.bytes_per_call = bytes;
    if (t.value("ops", 0.0) > 0) c.ops_per_call = t.value("ops", 0.0);
    if (t.contains("by_source") && t["by_source"].is_object() &&
        t["by_source"].contains("streamed") && t["by_source"]["streamed"].is_number())
      c.streamed_bytes = t["by_source"]["streamed"].get<double>();
  }
  // A whole-model count (k3tune count --model) keeps its phase's bytes per token beside the
  // per-op split: the figure a decode step's speed on a K3 follows.
  if (j.contains("bytes_per_token") && j["bytes_per_token"].is_object() &&
      j["bytes_per_token"].contains("streamed") && j["bytes_per_token"]["streamed"].is_number())
    c.streamed_bytes = j["bytes_per_token"]["streamed"].get<double>();
}

// One cell of the run with the run's aggregate of it.
CellFigures cell_figures(const k3store::CellAggregate& row, const std::string& model) {
  CellFigures c;
  c.cell_key = row.cell.cell_key;
  c.build_hash = row.cell.build_hash;
  c.target = row.cell.target;
  c.op = row.cell.op;
  c.shape = nlohmann::json::parse(row.cell.shape_json);
  c.params = nlohmann::json::parse(row.cell.params_json);
  c.measure = nlohmann::json::parse(row.cell.measure_json);
  c.model = model;
  c.config_key = config_key(c.target, c.op, c.shape, c.params, c.measure);
  if (!row.aggregate) {
    c.reason = "not measured (the run stopped before this cell finished)";
    return c;
  }
  const k3store::AggregateRecord& a = *row.aggregate;
  c.ok = a.ok;
  c.reason = a.reason;
  c.processes = a.processes;
  c.excluded_processes = a.excluded_processes;
  c.mean_ns = a.mean_ns;
  if (k3verdict::PerCall::of(c.measure).shows_interval(a.processes)) {
    c.ci_low_ns = a.ci_low_ns;
    c.ci_high_ns = a.ci_high_ns;
  }
  c.cv_between = a.cv_between;
  c.median_ns = a.median_ns;
  c.min_ns = a.min_ns;
  c.wide_ci = a.wide_ci;
  return c;
}

// Labels name the op, the shape, and the parameters and settings that vary among the run's cells
// of that op (the rest are the same everywhere and would only make lines long).
void make_labels(RunData& r) {
  std::map<std::string, std::map<std::string, std::set<std::string>>>
      values;  // op -> key -> values
  for (const auto& c : r.cells) {
    for (const auto& [k, v] : c.params.items()) values[c.op][k].insert(value_text(v));
    for (const char* k : kIdentitySettings)
      if (c.measure.contains(k))
        values[c.op][std::string("@") + k].insert(value_text(c.measure[k]));
  }
  for (auto& c : r.cells) {
    std::string varying;
    for (const auto& [k, vs] : values[c.op]) {
      if (vs.size() < 2) continue;
      const bool setting = k.front() == '@';
      const std::string name = setting ? k.substr(1) : k;
      const nlohmann::json& v = setting ? c.measure[name] : c.params[name];
      varying += (varying.empty() ? "" : ",") + name + "=" + value_text(v);
    }
    c.label = c.op + " " + shape_text(c.shape) + (varying.empty() ? "" : " " + varying);
    const std::string label = r.build_label(c.build_hash);
    if (!label.empty()) c.label += " [" + label + "]";
  }
}

}  // namespace

const BuildInfo* RunData::build(const std::string& hash) const {
  for (const auto& b : builds)
    if (b.build_hash == hash) return &b;
  return nullptr;
}

std::string RunData::build_label(const std::string& hash) const {
  const BuildInfo* b = build(hash);
  return b ? b->label : "";
}

std::string model_of_command(const std::string& command) {
  std::istringstream in(command);
  std::string word, prev;
  while (in >> word) {
    if (prev == "--model") return word;
    if (word.rfind("--model=", 0) == 0) return word.substr(8);
    prev = word;
  }
  return "";
}

std::string shape_text(const nlohmann::json& shape) {
  std::string s;
  for (const auto& [k, v] : shape.items()) s += (s.empty() ? "" : ",") + k + "=" + value_text(v);
  return s;
}

std::string config_key(const std::string& target, const std::string& op,
                       const nlohmann::json& shape, const nlohmann::json& params,
                       const nlohmann::json& measure) {
  nlohmann::json settings = nlohmann::json::object();
  for (const char* k : kIdentitySettings)
    if (measure.contains(k)) settings[k] = measure[k];
  return nlohmann::json{
      {"target", target}, {"op", op}, {"shape", shape}, {"params", params}, {"settings", settings}}
      .dump();  // objects are key-sorted: canonical
}

std::string latest_run(k3store::Connection& db) {
  auto latest = k3store::latest_run_uuid(db);
  if (!latest) throw VerdictError(fmt::format("{}: no runs in the database", db.path()));
  return *latest;
}

RunData load_run(k3store::Connection& db, const std::string& run_prefix) {
  const auto matches = k3store::runs_with_prefix(db, run_prefix);
  if (run_prefix.empty() || matches.size() != 1) {
    throw VerdictError(
        fmt::format("run '{}' matches {} runs in {}", run_prefix, matches.size(), db.path()));
  }
  const k3store::RunRecord& row = matches.front();
  RunData r;
  r.run_uuid = row.run_uuid;
  r.command = row.command;
  r.target = row.target;
  r.build_hash = row.build_hash;
  r.host = row.host;
  r.started_at = row.started_at;
  r.finished_at = row.finished_at;
  r.status = row.status;
  r.wall_s = row.wall_s;
  r.kernel_s = row.kernel_s;
  r.warmup_s = row.warmup_s;
  r.overhead_s = row.overhead_s;
  r.settings = nlohmann::json::parse(row.settings_json, nullptr, false);
  if (!r.settings.is_object()) r.settings = nlohmann::json::object();
  r.per_call = PerCall::of(r.settings);
  r.model = model_of_command(r.command);
  load_builds(db, r);
  load_environment(db, r);

  for (const auto& row : k3store::run_cells(db, r.run_uuid))
    r.cells.push_back(cell_figures(row, r.model));
  std::map<std::string, CellFigures*> by_cell;
  for (auto& c : r.cells) by_cell[c.cell_key] = &c;
  load_process_means(db, r, by_cell);
  for (auto& c : r.cells) load_runner_facts(db, r, c);
  make_labels(r);

  const auto counts = k3store::process_counts(db, r.run_uuid);
  r.processes_ok = counts.ok;
  r.processes_failed = counts.failed;
  r.processes_disturbed = counts.disturbed;
  return r;
}

std::string previous_comparable_run(k3store::Connection& db, const RunData& run) {
  std::set<std::string> keys;
  for (const auto& c : run.cells)
    if (c.build_hash == run.build_hash) keys.insert(c.config_key);
  for (const auto& candidate :
       k3store::earlier_runs(db, run.target, run.run_uuid, run.started_at)) {
    for (const auto& cell : k3store::ok_cells_of_run_build(db, candidate)) {
      if (keys.count(config_key(run.target, cell.op, nlohmann::json::parse(cell.shape_json),
                                nlohmann::json::parse(cell.params_json),
                                nlohmann::json::parse(cell.measure_json))) > 0)
        return candidate;
    }
  }
  return "";
}

}  // namespace k3verdict
