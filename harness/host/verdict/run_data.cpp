#include "harness/host/verdict/run_data.h"

#include <map>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "harness/host/verdict/verdict_error.h"
#include "harness/host/verdict/value_text.h"

namespace k3verdict {
namespace {

// Measurement settings that change what is measured; the others (repetitions, warm-up, time per
// repetition, fixed call count, accuracy check) change only how precisely.
// table_sha256, not the table's path: the same table copied elsewhere is the same configuration.
const char* const kIdentitySettings[] = {"path",        "cpus",          "pool_wait",   "huge_pages",
                                         "weight_load", "extra_work_ns", "table_sha256"};

std::optional<double> opt_real(k3store::Statement& s, int col) {
  return s.is_null(col) ? std::nullopt : std::optional<double>(s.real(col));
}

void load_builds(k3store::Connection& db, RunData& r) {
  std::vector<std::pair<std::string, std::string>> hashes;  // (hash, label)
  if (r.settings.contains("builds") && r.settings["builds"].is_array()) {
    for (const auto& b : r.settings["builds"])
      hashes.emplace_back(b.value("build_hash", ""), b.value("label", ""));
  }
  if (hashes.empty()) hashes.emplace_back(r.build_hash, "");
  auto s = db.prepare(
      "SELECT variant, binary_path, compiler, flags, cmake_options, source_revision, source_dirty,"
      " recorded_by, created_at FROM builds WHERE build_hash = ?1");
  for (const auto& [hash, label] : hashes) {
    BuildInfo b;
    b.build_hash = hash;
    b.label = label;
    s.bind(1, hash);
    if (s.step()) {
      b.variant = s.text(0);
      b.binary_path = s.text(1);
      b.compiler = s.text(2);
      b.flags = s.text(3);
      b.cmake_options = s.text(4);
      b.source_revision = s.text(5);
      if (!s.is_null(6)) b.source_dirty = s.integer(6) != 0;
      b.recorded_by = s.text(7);
      b.created_at = s.text(8);
    }
    s.reset();
    r.builds.push_back(b);
  }
}

void load_environment(k3store::Connection& db, RunData& r) {
  auto s = db.prepare(
      "SELECT runner_json FROM processes WHERE run_uuid = ?1 AND status = 'ok'"
      " AND runner_json IS NOT NULL AND runner_json <> '' ORDER BY order_index LIMIT 1");
  s.bind(1, r.run_uuid);
  if (!s.step()) return;
  const auto j = nlohmann::json::parse(s.text(0), nullptr, false);
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
  auto s = db.prepare(
      "SELECT a.cell_key, p.process_index, avg(x.ns) FROM aggregates a"
      " JOIN processes p ON p.cell_key = a.cell_key AND p.status = 'ok'"
      "   AND (p.disturbed = 0 OR a.processes = 0 OR a.excluded_processes = 0)"
      "   AND (p.run_uuid = a.run_uuid OR a.source_runs LIKE '%\"' || p.run_uuid || '\"%')"
      " JOIN samples x ON x.run_uuid = p.run_uuid AND x.cell_key = p.cell_key"
      "   AND x.process_index = p.process_index"
      " WHERE a.run_uuid = ?1 AND a.status = 'ok'"
      " GROUP BY a.cell_key, p.run_uuid, p.process_index ORDER BY a.cell_key, p.process_index");
  s.bind(1, r.run_uuid);
  while (s.step()) {
    auto it = by_cell.find(s.text(0));
    if (it == by_cell.end()) continue;
    it->second->process_rounds.push_back(static_cast<int>(s.integer(1)));
    it->second->process_means.push_back(s.real(2));
  }
}

// The runner's accuracy block and work per call, from the cell's accuracy-checked process (the
// inputs are a function of the seed, so any run's check of the same cell key says the same).
void load_runner_facts(k3store::Connection& db, RunData& r, CellFigures& c) {
  auto s = db.prepare(
      "SELECT runner_json, path FROM processes WHERE cell_key = ?1 AND status = 'ok'"
      " AND runner_json IS NOT NULL AND runner_json <> ''"
      " ORDER BY (json_type(runner_json, '$.accuracy') = 'object') DESC, (run_uuid = ?2) DESC,"
      " order_index LIMIT 1");
  s.bind(1, c.cell_key).bind(2, r.run_uuid);
  if (!s.step()) return;
  c.path = s.is_null(1) ? "" : s.text(1);
  const auto j = nlohmann::json::parse(s.text(0), nullptr, false);
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
  }
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
  auto s = db.prepare("SELECT run_uuid FROM runs ORDER BY started_at DESC, rowid DESC LIMIT 1");
  if (!s.step()) throw VerdictError(fmt::format("{}: no runs in the database", db.path()));
  return s.text(0);
}

RunData load_run(k3store::Connection& db, const std::string& run_prefix) {
  auto find = db.prepare(
      "SELECT run_uuid, command, target, build_hash, host, started_at, coalesce(finished_at, ''),"
      " status, wall_s, kernel_s, warmup_s, overhead_s, coalesce(settings_json, '{}')"
      " FROM runs WHERE run_uuid LIKE ?1 || '%'");
  find.bind(1, run_prefix);
  std::vector<RunData> matches;
  while (find.step()) {
    RunData r;
    r.run_uuid = find.text(0);
    r.command = find.text(1);
    r.target = find.text(2);
    r.build_hash = find.text(3);
    r.host = find.text(4);
    r.started_at = find.text(5);
    r.finished_at = find.text(6);
    r.status = find.text(7);
    r.wall_s = opt_real(find, 8);
    r.kernel_s = opt_real(find, 9);
    r.warmup_s = opt_real(find, 10);
    r.overhead_s = opt_real(find, 11);
    r.settings = nlohmann::json::parse(find.text(12), nullptr, false);
    if (!r.settings.is_object()) r.settings = nlohmann::json::object();
    r.per_call = PerCall::of(r.settings);
    matches.push_back(std::move(r));
  }
  if (run_prefix.empty() || matches.size() != 1) {
    throw VerdictError(
        fmt::format("run '{}' matches {} runs in {}", run_prefix, matches.size(), db.path()));
  }
  RunData r = std::move(matches.front());
  r.model = model_of_command(r.command);
  load_builds(db, r);
  load_environment(db, r);

  auto cells = db.prepare(
      "SELECT c.cell_key, c.build_hash, c.target, c.op, c.shape_json, c.params_json, "
      "c.measure_json,"
      " a.status, coalesce(a.reason, ''), a.processes, a.excluded_processes, a.mean_ns, "
      "a.ci_low_ns,"
      " a.ci_high_ns, a.cv_between, a.median_ns, a.min_ns, coalesce(a.wide_ci, 0)"
      " FROM cells c LEFT JOIN aggregates a ON a.cell_key = c.cell_key AND a.run_uuid = ?1"
      " WHERE c.cell_key IN (SELECT value FROM runs, json_each(runs.order_json)"
      "                      WHERE runs.run_uuid = ?1)"
      " ORDER BY c.op, c.shape_json, c.params_json, c.build_hash");
  cells.bind(1, r.run_uuid);
  while (cells.step()) {
    CellFigures c;
    c.cell_key = cells.text(0);
    c.build_hash = cells.text(1);
    c.target = cells.text(2);
    c.op = cells.text(3);
    c.shape = nlohmann::json::parse(cells.text(4));
    c.params = nlohmann::json::parse(cells.text(5));
    c.measure = nlohmann::json::parse(cells.text(6));
    c.model = r.model;
    c.config_key = config_key(c.target, c.op, c.shape, c.params, c.measure);
    if (cells.is_null(7)) {
      c.reason = "not measured (the run stopped before this cell finished)";
    } else {
      c.ok = cells.text(7) == "ok";
      c.reason = cells.text(8);
      c.processes = static_cast<int>(cells.integer(9));
      c.excluded_processes = static_cast<int>(cells.integer(10));
      c.mean_ns = opt_real(cells, 11);
      c.ci_low_ns = opt_real(cells, 12);
      c.ci_high_ns = opt_real(cells, 13);
      c.cv_between = opt_real(cells, 14);
      c.median_ns = opt_real(cells, 15);
      c.min_ns = opt_real(cells, 16);
      c.wide_ci = cells.integer(17) != 0;
    }
    r.cells.push_back(std::move(c));
  }
  std::map<std::string, CellFigures*> by_cell;
  for (auto& c : r.cells) by_cell[c.cell_key] = &c;
  load_process_means(db, r, by_cell);
  for (auto& c : r.cells) load_runner_facts(db, r, c);
  make_labels(r);

  auto counts = db.prepare(
      "SELECT coalesce(sum(status = 'ok'), 0), coalesce(sum(status = 'failed'), 0),"
      " coalesce(sum(disturbed), 0) FROM processes WHERE run_uuid = ?1");
  counts.bind(1, r.run_uuid);
  if (counts.step()) {
    r.processes_ok = static_cast<int>(counts.integer(0));
    r.processes_failed = static_cast<int>(counts.integer(1));
    r.processes_disturbed = static_cast<int>(counts.integer(2));
  }
  return r;
}

std::string previous_comparable_run(k3store::Connection& db, const RunData& run) {
  std::set<std::string> keys;
  for (const auto& c : run.cells)
    if (c.build_hash == run.build_hash) keys.insert(c.config_key);
  auto s = db.prepare(
      "SELECT run_uuid FROM runs WHERE target = ?1 AND run_uuid <> ?2 AND started_at <= ?3"
      " ORDER BY started_at DESC, rowid DESC");
  s.bind(1, run.target).bind(2, run.run_uuid).bind(3, run.started_at);
  auto cells = db.prepare(
      "SELECT c.op, c.shape_json, c.params_json, c.measure_json FROM aggregates a"
      " JOIN cells c USING (cell_key) WHERE a.run_uuid = ?1 AND a.status = 'ok'"
      " AND c.build_hash = (SELECT build_hash FROM runs WHERE run_uuid = ?1)");
  while (s.step()) {
    const std::string candidate = s.text(0);
    cells.bind(1, candidate);
    bool shared = false;
    while (!shared && cells.step()) {
      shared = keys.count(config_key(
                   run.target, cells.text(0), nlohmann::json::parse(cells.text(1)),
                   nlohmann::json::parse(cells.text(2)), nlohmann::json::parse(cells.text(3)))) > 0;
    }
    cells.reset();
    if (shared) return candidate;
  }
  return "";
}

}  // namespace k3verdict
