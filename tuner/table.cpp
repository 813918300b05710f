#include "tuner/table.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "harness/common/params/param_spec.h"
#include "harness/host/bench/json_schema.h"
#include "harness/host/bench/user_error.h"
#include "harness/host/store/results.h"
#include "k3k/table_rules.h"
#include "k3k/tuning.h"

namespace k3tuner {

nlohmann::json shape_class(const std::string& op, const std::string& path,
                           const nlohmann::json& shape) {
  std::map<std::string, std::int64_t> integers;
  for (const auto& [k, v] : shape.items())
    if (v.is_number_integer()) integers[k] = v.get<std::int64_t>();
  nlohmann::json c = {{"path", path}};
  for (const auto& [k, v] : k3k::rules::shape_class(op, integers)) c[k] = v;
  return c;
}

std::string entry_id(const std::string& op, const nlohmann::json& cls) {
  std::map<std::string, std::int64_t> keys;
  for (const auto& [k, v] : cls.items())
    if (k != "path") keys[k] = v.get<std::int64_t>();
  return k3k::rules::entry_id(op, cls.at("path").get<std::string>(), keys);
}

namespace {

// An entry's parameters as the table writes them (op-parameter knobs only; the layer is the
// class's), and the layer its chosen configuration ran on.
nlohmann::json table_params(const SearchSpace& space, const Config& config) {
  nlohmann::json params = nlohmann::json::object();
  for (const auto& knob : space.knobs())
    if (knob.name != "path" && !knob.measurement) params[knob.name] = config.at(knob.name);
  return params;
}

std::string entry_path(const TableEntry& e) {
  const Candidate& chosen = e.result->candidates[e.result->chosen];
  // "auto" names no layer: the class keeps the layer the runner resolved it to.
  if (chosen.config.contains("path") && chosen.config.at("path") != "auto")
    return chosen.config.at("path").get<std::string>();
  return e.path;
}

}  // namespace

std::vector<RuleGroup> rule_groups(const std::vector<TableEntry>& entries) {
  std::map<std::pair<std::string, std::string>, RuleGroup> groups;
  for (const auto& e : entries) {
    if (e.result == nullptr || e.result->chosen == SIZE_MAX) continue;
    const TuneResult& r = *e.result;
    const std::string path = entry_path(e);
    RuleGroup& g = groups[{e.op, path}];
    g.op = e.op;
    g.path = path;
    ShapeLandscape s;
    std::map<std::string, std::int64_t> integers;
    for (const auto& [k, v] : e.shape.items())
      if (v.is_number_integer()) integers[k] = v.get<std::int64_t>();
    s.label = k3params::to_kv(e.shape);
    s.cls = k3k::rules::shape_class(e.op, integers);
    const Config& chosen = r.candidates[r.chosen].config;
    for (const auto& c : r.candidates) {
      // Only the chosen configuration's layer: a leaf applies to the rule's path alone.
      if (c.rejected || c.values.empty()) continue;
      if (c.config.contains("path") && c.config.at("path") != chosen.at("path")) continue;
      s.cost[c.key] = c.mean();
      g.params_of[c.key] = table_params(*e.space, c.config);
    }
    s.best = r.candidates[r.chosen].key;
    s.defaults = r.defaults != SIZE_MAX ? r.candidates[r.defaults].key : s.best;
    g.shapes.push_back(std::move(s));
  }
  std::vector<RuleGroup> out;
  for (auto& [key, g] : groups) out.push_back(std::move(g));
  return out;
}

nlohmann::json make_table(const TargetFacts& target, const TableSource& src,
                          const std::vector<TableEntry>& entries, const nlohmann::json& gates) {
  std::set<std::string> sessions;
  nlohmann::json out = nlohmann::json::array();
  for (const auto& e : entries) {
    if (e.result == nullptr || e.result->chosen == SIZE_MAX) continue;
    const TuneResult& r = *e.result;
    const Candidate& chosen = r.candidates[r.chosen];
    nlohmann::json params = nlohmann::json::object();
    std::string path = e.path;
    for (const auto& knob : e.space->knobs()) {
      if (knob.name == "path") {
        // "auto" names no layer: the class keeps the layer the runner resolved it to.
        const auto chosen_path = chosen.config.at("path").get<std::string>();
        if (chosen_path != "auto") path = chosen_path;
      } else if (!knob.measurement) {
        params[knob.name] = chosen.config.at(knob.name);
      }
    }
    const nlohmann::json cls = shape_class(e.op, path, e.shape);
    nlohmann::json evidence = {{"mean", r.evidence.mean},
                               {"unit", e.unit},
                               {"ci95", {r.evidence.ci_low, r.evidence.ci_high}},
                               {"processes", r.evidence.processes},
                               {"default_mean", r.evidence.default_mean},
                               {"speedup", r.evidence.speedup},
                               {"speedup_ci95", {r.evidence.speedup_low, r.evidence.speedup_high}},
                               {"paired", r.evidence.paired},
                               {"paired_rounds", r.evidence.paired_rounds},
                               {"conclusive", r.evidence.conclusive()},
                               {"session", e.session}};
    nlohmann::json entry = {{"id", entry_id(e.op, cls)},
                            {"op", e.op},
                            {"class", cls},
                            {"params", params},
                            {"evidence", evidence}};
    if (params.contains("accumulate")) entry["hp"] = params["accumulate"] == "fp16";
    out.push_back(entry);
    sessions.insert(e.session);
  }
  nlohmann::json source = {{"objective", src.objective},
                           {"proxy", src.proxy},
                           {"forced_emulated", src.forced_emulated},
                           {"sessions", std::vector<std::string>(sessions.begin(), sessions.end())},
                           {"run_uuids", src.run_uuids},
                           {"command", src.command},
                           {"k3tune", K3TUNE_VERSION},
                           {"target", src.target},
                           {"build_hash", src.build_hash}};
  nlohmann::json board = {{"fingerprint", target.fingerprint}};
  if (!src.board_name.empty()) board["name"] = src.board_name;
  nlohmann::json table = {{"schema", std::string(k3k::rules::kTuningTableSchema)},
                          {"kernel_abi", k3k::rules::kKernelAbiVersion},
                          {"created_at", k3store::now_utc()},
                          {"source", source},
                          {"board", board},
                          {"entries", out}};
  table["model"] = src.model.empty() ? nlohmann::json(nullptr) : nlohmann::json(src.model);
  if (!gates.empty()) table["gates"] = gates;
  nlohmann::json rules = nlohmann::json::array();
  for (const auto& g : rule_groups(entries)) {
    std::set<std::map<std::string, std::int64_t>> classes;
    for (const auto& s : g.shapes) classes.insert(s.cls);
    if (g.shapes.size() < kMinRuleShapes || classes.size() < 2) continue;
    rules.push_back(fit_shape_rule(g.shapes).to_json(g.op, g.path, g.params_of));
  }
  if (!rules.empty()) table["rules"] = rules;
  return table;
}

TableCheck validate_table(const nlohmann::json& table, const std::string& schema_file) {
  TableCheck check;
  nlohmann::json schema_doc;
  {
    std::ifstream f(schema_file);
    if (!f) throw k3bench::UserError(fmt::format("{}: cannot read the table schema", schema_file));
    try {
      schema_doc = nlohmann::json::parse(f);
    } catch (const nlohmann::json::exception& e) {
      throw k3bench::UserError(fmt::format("{}: not JSON: {}", schema_file, e.what()));
    }
  }
  for (const auto& line : k3bench::check_against_schema(schema_doc, table).problems) {
    ++check.schema_problems;
    if (check.problems.size() < kMaxProblemLines) check.problems.push_back(line);
  }
  // The loader's own verdict, exactly as a kernel library of this build gives it, on the table's
  // own board (a table is validated anywhere, loaded only where it was made).
  std::string problem;
  if (k3k::TuningTable::parse(table.dump(), nullptr, problem) == nullptr) check.loader = problem;
  return check;
}

std::vector<std::string> TableCheck::lines() const {
  std::vector<std::string> out = problems;
  if (schema_problems > problems.size())
    out.push_back(fmt::format("... and {} more schema problems ({} in all)",
                              schema_problems - problems.size(), schema_problems));
  if (!loader.empty()) out.push_back("loader: " + loader);
  return out;
}

std::string show_table(const nlohmann::json& t) {
  std::ostringstream o;
  const auto& fp = t.at("board").at("fingerprint");
  o << fmt::format("tuning table {} (kernel ABI {}), created {}\n", t.value("schema", "?"),
                   t.value("kernel_abi", 0), t.value("created_at", "?"));
  o << fmt::format("board {}: marchid {}, VLEN {}, {} CPUs ({}), TCM {} {} x {} B\n",
                   t["board"].value("name", "-"),
                   fp["marchid"].is_null() ? "-" : fp["marchid"].get<std::string>(),
                   fp["vlen"].is_null() ? "-" : std::to_string(fp["vlen"].get<int>()),
                   fp.value("cpus", 0), fp.value("cpu_model", "?"), fp["tcm"].value("backend", "?"),
                   fp["tcm"].value("blocks", 0), fp["tcm"].value("block_bytes", 0));
  const auto& src = t.at("source");
  o << fmt::format(
      "source: objective {}{}{}, model {}, target {}\n", src.value("objective", "?"),
      src.value("proxy", false) ? " (a proxy, not a speed)" : "",
      src.value("forced_emulated", false) ? ", timed on EMULATED features (--force)" : "",
      t.value("model", nlohmann::json()).is_string() ? t["model"].get<std::string>() : "-",
      src.value("target", "?"));
  if (t.contains("gates")) {
    for (const auto& [name, g] : t["gates"].items())
      o << fmt::format("gate {}: {}\n", name, g.dump());
  }
  // A rule in one line per node: "n < 3072 ? 1 : 2" for a split, the parameters for a leaf.
  for (const auto& r : t.value("rules", nlohmann::json::array())) {
    const auto fit = r.value("fit", nlohmann::json::object());
    o << fmt::format("rule {}/{} (for shapes without an entry; fitted on {} shapes):\n",
                     r["op"].get<std::string>(), r["path"].get<std::string>(),
                     fit.value("shapes", 0));
    for (std::size_t i = 0; i < r["nodes"].size(); ++i) {
      const auto& n = r["nodes"][i];
      o << (n.contains("key")
                ? fmt::format("  {}: {} < {} ? {} : {}\n", i, n["key"].get<std::string>(),
                              n["below"].get<std::int64_t>(), n["then"].get<std::int64_t>(),
                              n["else"].get<std::int64_t>())
                : fmt::format("  {}: {}\n", i, k3params::to_kv(n["params"])));
    }
  }
  o << fmt::format("{:<44} {:<44} {:>10} {:>22}\n", "entry", "parameters", "speed-up", "95% CI");
  for (const auto& e : t.at("entries")) {
    const auto& ev = e["evidence"];
    std::string ci = ev.contains("speedup_ci95")
                         ? fmt::format("{:.3f}..{:.3f}", ev["speedup_ci95"][0].get<double>(),
                                       ev["speedup_ci95"][1].get<double>())
                         : "-";
    // An entry measured against the defaults in too few paired rounds says so instead of an
    // interval.
    if (!ev.value("conclusive", true))
      ci = fmt::format("{} paired rounds: too few", ev.value("paired_rounds", 0));
    o << fmt::format("{:<44} {:<44} {:>9.3f}x {:>22}\n", e["id"].get<std::string>(),
                     k3params::to_kv(e["params"]), ev.value("speedup", 1.0), ci);
  }
  return o.str();
}

std::string diff_tables(const nlohmann::json& a, const nlohmann::json& b) {
  std::ostringstream o;
  if (a["board"]["fingerprint"] != b["board"]["fingerprint"])
    o << fmt::format("board: {} -> {}\n", a["board"]["fingerprint"].dump(),
                     b["board"]["fingerprint"].dump());
  std::map<std::string, nlohmann::json> ea, eb;
  for (const auto& e : a.at("entries")) ea[e["id"].get<std::string>()] = e;
  for (const auto& e : b.at("entries")) eb[e["id"].get<std::string>()] = e;
  int same = 0;
  for (const auto& [id, e] : ea) {
    auto it = eb.find(id);
    if (it == eb.end()) {
      o << fmt::format("- {} {}\n", id, k3params::to_kv(e["params"]));
    } else if (it->second["params"] != e["params"]) {
      o << fmt::format("~ {} {} -> {} (speed-up {:.3f}x -> {:.3f}x)\n", id,
                       k3params::to_kv(e["params"]), k3params::to_kv(it->second["params"]),
                       e["evidence"].value("speedup", 1.0),
                       it->second["evidence"].value("speedup", 1.0));
    } else {
      ++same;
    }
  }
  for (const auto& [id, e] : eb)
    if (!ea.contains(id)) o << fmt::format("+ {} {}\n", id, k3params::to_kv(e["params"]));
  if (a.value("gates", nlohmann::json::object()) != b.value("gates", nlohmann::json::object()))
    o << fmt::format("gates: {} -> {}\n", a.value("gates", nlohmann::json::object()).dump(),
                     b.value("gates", nlohmann::json::object()).dump());
  o << fmt::format("{} entries unchanged\n", same);
  return o.str();
}

nlohmann::json read_table(const std::string& path) {
  std::ifstream f(path);
  if (!f) throw k3bench::UserError(fmt::format("{}: cannot read the table", path));
  try {
    return nlohmann::json::parse(f);
  } catch (const nlohmann::json::exception& e) {
    throw k3bench::UserError(fmt::format("{}: not a JSON document: {}", path, e.what()));
  }
}

nlohmann::json ShapeExplanation::to_json() const {
  nlohmann::json j = {{"path", path}, {"class", shape_class}, {"how", how}, {"params", params}};
  j["entry"] = entry_id.empty() ? nlohmann::json(nullptr) : nlohmann::json(entry_id);
  if (how == "nearest") j["distance_log2"] = distance;
  if (how == "rule") j["decisions"] = decisions;
  return j;
}

std::vector<ShapeExplanation> explain_shape(const nlohmann::json& table, const std::string& op,
                                            const std::string& path,
                                            const std::map<std::string, std::int64_t>& shape) {
  std::string problem;
  const auto loaded = k3k::TuningTable::parse(table.dump(), nullptr, problem);
  if (loaded == nullptr)
    throw k3bench::UserError("the kernel library refuses this table: " + problem);
  const k3k::rules::OpRules* rules = k3k::rules::find_op(op);
  if (rules == nullptr)
    throw k3bench::UserError(fmt::format("--op: '{}' is not an op a table tunes", op));
  for (const auto& [key, value] : shape) {
    (void)value;
    const std::vector<std::string_view> keys = {"m",   "k",        "n",       "seq",
                                                "ctx", "head_dim", "q_heads", "kv_heads"};
    if (std::find(keys.begin(), keys.end(), key) == keys.end())
      throw k3bench::UserError(fmt::format(
          "--shape: '{}' is not a shape key (m, k, n, seq, ctx, head_dim, q_heads, kv_heads)",
          key));
  }
  std::set<std::string> paths;
  if (!path.empty()) {
    if (!k3k::parse_kernel_path(path))
      throw k3bench::UserError(fmt::format("--path: '{}' is not generic, rvv or ime2", path));
    paths.insert(path);
  } else {
    for (const auto& e : loaded->entries())
      if (e.op == op) paths.insert(k3k::to_string(e.path));
    for (const auto& r : loaded->rules())
      if (r.op == op) paths.insert(k3k::to_string(r.path));
    if (paths.empty()) paths.insert("generic");
  }
  std::vector<ShapeExplanation> out;
  for (const auto& p : paths) {
    ShapeExplanation x;
    x.path = p;
    const auto cls = k3k::rules::shape_class(op, shape);
    x.shape_class = cls;
    const k3k::TuningEntry* e = loaded->find(op, *k3k::parse_kernel_path(p), shape);
    if (e == nullptr) {
      x.how = "defaults";
    } else {
      x.entry_id = e->id;
      for (const auto& [k, v] : e->params)
        x.params[k] = std::holds_alternative<std::int64_t>(v)
                          ? nlohmann::json(std::get<std::int64_t>(v))
                          : nlohmann::json(std::get<std::string>(v));
      x.how = e->from_rule ? "rule" : e->shape_class == cls ? "entry" : "nearest";
      if (e->from_rule) {
        std::vector<k3k::RuleStep> steps;
        loaded->apply_rule(op, *k3k::parse_kernel_path(p), shape, &steps);
        for (const auto& s : steps)
          x.decisions.push_back(
              fmt::format("{} {} {} {}", s.key, s.value, s.took_below ? "<" : ">=", s.below));
      }
      for (const auto& [k, v] : cls)
        if (auto it = e->shape_class.find(k); it != e->shape_class.end() && v > 0 && it->second > 0)
          x.distance += std::abs(std::log2(double(it->second) / double(v)));
    }
    out.push_back(std::move(x));
  }
  return out;
}

}  // namespace k3tuner
