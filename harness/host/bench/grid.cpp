#include "harness/host/bench/grid.h"

#include <toml++/toml.h>

#include <algorithm>
#include <filesystem>

#include <fmt/format.h>

#include "harness/common/model/model_config.h"
#include "harness/host/bench/model_runs.h"
#include "harness/common/model/model_shapes.h"
#include "harness/host/bench/user_error.h"

namespace k3bench {
namespace {

// One block of the grid: an op, its shapes, fixed parameters and swept parameters.
struct CaseBlock {
  std::string op, where;
  std::vector<std::pair<std::map<std::string, std::string>, std::string>> shapes;  // shape, role
  std::map<std::string, std::string> params;
  std::vector<std::pair<std::string, std::vector<std::string>>> sweep;
};

[[noreturn]] void toml_fail(const std::string& file, const toml::node& node, const std::string& key,
                            const std::string& what) {
  throw UserError(fmt::format("{}:{}: {}: {}", file, node.source().begin.line, key, what));
}

toml::table parse_toml(const std::string& path) {
  if (!std::filesystem::exists(path)) throw UserError(fmt::format("{}: no such file", path));
  try {
    return toml::parse_file(path);
  } catch (const toml::parse_error& e) {
    throw UserError(fmt::format("{}:{}: {}", path, e.source().begin.line, e.description()));
  }
}

std::string scalar_text(const std::string& file, const toml::node& v, const std::string& key) {
  if (auto i = v.value_exact<int64_t>()) return std::to_string(*i);
  if (auto d = v.value_exact<double>()) return fmt::format("{}", *d);
  if (auto s = v.value_exact<std::string>()) return *s;
  if (auto b = v.value_exact<bool>()) return *b ? "1" : "0";
  toml_fail(file, v, key, "expected a number, string or boolean");
}

std::map<std::string, std::string> table_kv(const std::string& file, const toml::node& node,
                                            const std::string& key) {
  const toml::table* t = node.as_table();
  if (t == nullptr) toml_fail(file, node, key, "expected a table such as { n = 96, k = 256 }");
  std::map<std::string, std::string> out;
  for (const auto& [k, v] : *t)
    out[std::string(k.str())] = scalar_text(file, v, key + "." + std::string(k.str()));
  return out;
}

// [measure]: process plan keys (processes, max_processes, target_ci) and measurement settings
// (MeasureSettings::keys()). A key also given on the command line keeps the command line's value.
void read_measure_table(const std::string& file, const toml::table& doc, MeasureSettings& s,
                        ProcessPlan& plan, const std::vector<std::string>& cli_keys) {
  const toml::node* node = doc.get("measure");
  if (node == nullptr) return;
  const toml::table* t = node->as_table();
  if (t == nullptr) toml_fail(file, *node, "measure", "expected a table");
  for (const auto& [k, v] : *t) {
    const std::string name(k.str());
    const std::string key = "measure." + name;
    const bool overridden = std::find(cli_keys.begin(), cli_keys.end(), name) != cli_keys.end();
    if (name == "processes" || name == "max_processes") {
      auto x = v.value_exact<int64_t>();
      if (!x || *x < 1 || *x > 100000) toml_fail(file, v, key, "expected a positive integer");
      if (!overridden)
        (name == "processes" ? plan.processes : plan.max_processes) = static_cast<int>(*x);
    } else if (name == "target_ci") {
      auto x = v.value<double>();
      if (!x || *x < 0 || *x >= 1)
        toml_fail(file, v, key, "expected a fraction in [0, 1) (0: fixed count)");
      if (!overridden) plan.target_ci = *x;
    } else if (MeasureSettings::is_key(name)) {
      const std::string where = fmt::format("{}:{}", file, v.source().begin.line);
      if (!overridden) s.set(name, scalar_text(file, v, key), where);
    } else {
      toml_fail(file, v, key,
                "unknown key (known: processes, max_processes, target_ci, repetitions, warmup, "
                "min_time_s, iterations, check, path, cpus, pool_wait, huge_pages, weight_load)");
    }
  }
}

// A model's op cells, derived from its dimensions (harness/common/model/model_shapes.h); --op filters
// them. With `runs`, the whole-model cells of `k3tune model` instead (model_runs.h).
std::vector<CaseBlock> model_blocks(const std::string& models_dir, const std::string& model,
                                    const std::vector<std::string>& op_filter,
                                    const ModelRuns* runs = nullptr) {
  k3model::ModelConfig config;
  try {
    config = k3model::load_model_config(k3model::resolve_model_path(model, models_dir));
  } catch (const k3model::ModelConfigError& e) {
    throw UserError(e.what());
  }
  std::vector<CaseBlock> blocks;
  const std::string where = config.file;
  if (runs != nullptr) {
    for (const auto& [op, shape, role] : model_run_shapes(config, *runs)) {
      CaseBlock b;
      b.op = op;
      b.where = where;
      b.shapes.push_back({shape, role});
      blocks.push_back(std::move(b));
    }
    return blocks;
  }
  for (const auto& s : k3model::derive_op_shapes(config)) {
    if (!op_filter.empty() && std::find(op_filter.begin(), op_filter.end(), s.op) == op_filter.end())
      continue;
    CaseBlock b;
    b.op = s.op;
    b.where = where;
    b.shapes.push_back({s.shape, s.role});
    blocks.push_back(std::move(b));
  }
  if (blocks.empty())
    throw UserError(fmt::format("--model {}: no shapes left after the --op filter", model));
  return blocks;
}

std::vector<CaseBlock> config_blocks(const std::string& file, const std::string& models_dir,
                                     MeasureSettings& settings, ProcessPlan& plan,
                                     const std::vector<std::string>& cli_keys) {
  const toml::table doc = parse_toml(file);
  read_measure_table(file, doc, settings, plan, cli_keys);
  std::vector<CaseBlock> blocks;
  const toml::array* cases = doc["case"].as_array();
  if (cases == nullptr) throw UserError(fmt::format("{}: no [[case]] entries", file));
  for (const auto& entry : *cases) {
    const toml::table* t = entry.as_table();
    if (t == nullptr) toml_fail(file, entry, "case", "expected [[case]] tables");
    if (auto model = (*t)["model"].value<std::string>()) {
      std::vector<std::string> ops;
      if (const toml::array* a = (*t)["ops"].as_array())
        for (const auto& o : *a) ops.push_back(o.value_or(std::string()));
      for (auto& b : model_blocks(models_dir, *model, ops)) blocks.push_back(std::move(b));
      continue;
    }
    CaseBlock b;
    const auto op = (*t)["op"].value<std::string>();
    if (!op) toml_fail(file, entry, "case.op", "missing op (or model)");
    b.op = *op;
    b.where = fmt::format("{}:{}", file, entry.source().begin.line);
    for (const auto& [k, v] : *t) {
      const std::string key = "case." + std::string(k.str());
      if (k == "op") continue;
      if (k == "shapes") {
        const toml::array* a = v.as_array();
        if (a == nullptr || a->empty())
          toml_fail(file, v, key, "expected a non-empty array of tables");
        for (const auto& s : *a) b.shapes.push_back({table_kv(file, s, key), ""});
      } else if (k == "params") {
        b.params = table_kv(file, v, key);
      } else if (k == "grid") {
        const toml::table* g = v.as_table();
        if (g == nullptr)
          toml_fail(file, v, key, "expected a table of arrays, e.g. { workers = [1, 2] }");
        for (const auto& [gk, gv] : *g) {
          const std::string gkey = key + "." + std::string(gk.str());
          const toml::array* a = gv.as_array();
          if (a == nullptr || a->empty()) toml_fail(file, gv, gkey, "expected a non-empty array");
          std::vector<std::string> values;
          for (const auto& x : *a) values.push_back(scalar_text(file, x, gkey));
          b.sweep.push_back({std::string(gk.str()), values});
        }
      } else {
        toml_fail(file, v, key, "unknown key (known: op, shapes, params, grid, model, ops)");
      }
    }
    if (b.shapes.empty()) toml_fail(file, entry, "case.shapes", "missing");
    blocks.push_back(std::move(b));
  }
  return blocks;
}

// --grid key=v1,v2,... (repeatable): the swept keys of a block, first key slowest.
std::vector<std::pair<std::string, std::vector<std::string>>> parse_sweep(
    const std::vector<std::string>& grid) {
  std::vector<std::pair<std::string, std::vector<std::string>>> sweep;
  for (const auto& g : grid) {
    const auto eq = g.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == g.size()) {
      throw UserError(fmt::format("--grid: '{}' is not key=v1,v2,...", g));
    }
    std::vector<std::string> values;
    std::size_t pos = eq + 1;
    while (pos <= g.size()) {
      std::size_t end = g.find(',', pos);
      if (end == std::string::npos) end = g.size();
      if (end == pos) throw UserError(fmt::format("--grid: empty value in '{}'", g));
      values.push_back(g.substr(pos, end - pos));
      pos = end + 1;
    }
    sweep.push_back({g.substr(0, eq), values});
  }
  return sweep;
}

std::vector<CaseBlock> command_line_blocks(const GridRequest& r) {
  if (r.ops.empty())
    throw UserError("bench: give --op (with --shape), --config FILE or --model NAME");
  if (r.shapes.empty())
    throw UserError("--shape: at least one shape is needed (e.g. --shape n=96,k=256)");
  std::vector<CaseBlock> blocks;
  for (const auto& op : r.ops) {
    CaseBlock b;
    b.op = op;
    b.where = "--op " + op;
    for (const auto& s : r.shapes) b.shapes.push_back({parse_kv(s, "--shape"), ""});
    b.params = parse_kv(r.params, "--params");
    b.sweep = parse_sweep(r.grid);
    blocks.push_back(std::move(b));
  }
  return blocks;
}

}  // namespace

std::string CellSpec::label() const {
  std::string s = op + " " + to_kv(shape);
  if (!role.empty()) s += " (" + role + ")";
  return s;
}

std::string CellSpec::settings_diff(const MeasureSettings& base) const {
  const nlohmann::json mine = settings.to_json(), theirs = base.to_json();
  nlohmann::json diff = nlohmann::json::object();
  for (const auto& [k, v] : mine.items())
    if (theirs.value(k, nlohmann::json()) != v) diff[k] = v;
  return to_kv(diff);
}

std::vector<CellSpec> expand_grid(const GridRequest& request, const Catalog& catalog,
                                  const std::string& models_dir, MeasureSettings& settings,
                                  ProcessPlan& plan, const std::vector<std::string>& cli_keys) {
  std::vector<CaseBlock> blocks;
  if (!request.config.empty())
    blocks = config_blocks(request.config, models_dir, settings, plan, cli_keys);
  else if (!request.model.empty()) {
    blocks = model_blocks(models_dir, request.model, request.ops,
                          request.model_runs.empty() ? nullptr : &request.model_runs);
    // The whole-model cells share one parameter set (k3tune model --params); it used to be
    // dropped here, so every run measured the defaults.
    // Their --grid as well (k3tune model --table sweeps table=none,T).
    if (!request.model_runs.empty())
      for (auto& b : blocks) {
        b.params = parse_kv(request.params, "--params");
        b.sweep = parse_sweep(request.grid);
      }
  }
  else
    blocks = command_line_blocks(request);
  std::vector<CellSpec> cells;
  for (const auto& b : blocks) {
    const OpSpec& op = catalog.op(b.op, b.where);
    for (const auto& [shape, role] : b.shapes) {
      const nlohmann::json shape_json = catalog.normalise(op, shape, true, b.where);
      // Cartesian product of the swept parameters, first key slowest.
      std::vector<std::size_t> index(b.sweep.size(), 0);
      for (;;) {
        // A swept key is an op parameter when the op declares it, else a measurement setting.
        std::map<std::string, std::string> params;
        MeasureSettings cell_settings = settings;
        auto assign = [&](const std::string& key, const std::string& value) {
          if (op.param(key) == nullptr && MeasureSettings::is_key(key))
            cell_settings.set(key, value, b.where);
          else
            params[key] = value;
        };
        for (const auto& [key, value] : b.params) assign(key, value);
        for (std::size_t i = 0; i < b.sweep.size(); ++i)
          assign(b.sweep[i].first, b.sweep[i].second[index[i]]);
        cells.push_back(
            {b.op, shape_json, catalog.normalise(op, params, false, b.where), cell_settings, role});
        std::size_t i = b.sweep.size();
        while (i > 0 && ++index[i - 1] == b.sweep[i - 1].second.size()) index[--i] = 0;
        if (i == 0) break;
      }
    }
  }
  // One canonical configuration is one cell: a model lists e.g. q_proj and o_proj with the same
  // N x K; they are measured once, with both roles in the label.
  std::vector<CellSpec> unique;
  for (auto& c : cells) {
    auto same = std::find_if(unique.begin(), unique.end(), [&](const CellSpec& u) {
      return u.op == c.op && u.shape == c.shape && u.params == c.params &&
             u.settings.to_json() == c.settings.to_json();
    });
    if (same == unique.end())
      unique.push_back(std::move(c));
    else if (!c.role.empty())
      same->role += (same->role.empty() ? "" : "+") + c.role;
  }
  cells = std::move(unique);
  return cells;
}

}  // namespace k3bench
