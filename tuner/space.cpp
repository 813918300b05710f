#include "tuner/space.h"

#include <toml++/toml.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>

#include <fmt/format.h>

#include "harness/host/bench/measure_settings.h"
#include "harness/common/params/param_spec.h"
#include "harness/host/bench/user_error.h"

namespace k3tuner {
namespace {

using k3bench::UserError;

[[noreturn]] void fail(const std::string& file, int line, const std::string& key, const std::string& what) {
  throw UserError(fmt::format("{}:{}: {}: {}", file, line, key, what));
}

int line_of(const toml::node& n) { return static_cast<int>(n.source().begin.line); }

nlohmann::json scalar(const std::string& file, const toml::node& v, const std::string& key) {
  if (auto i = v.value_exact<int64_t>()) return *i;
  if (auto s = v.value_exact<std::string>()) return *s;
  fail(file, line_of(v), key, "expected an integer or a string");
}

std::string text(const std::string& file, const toml::node& v, const std::string& key) {
  if (auto s = v.value_exact<std::string>()) return *s;
  if (auto i = v.value_exact<int64_t>()) return std::to_string(*i);
  fail(file, line_of(v), key, "expected a string (an expression) or an integer");
}

std::string constant_name(const std::string& knob, const std::string& choice) { return knob + "_" + choice; }

}  // namespace

std::string config_key(const Config& config) { return k3params::to_kv(config); }

SearchSpace SearchSpace::load(const std::string& file) {
  if (!std::filesystem::exists(file)) throw UserError(fmt::format("{}: no such search space file", file));
  toml::table doc;
  try {
    doc = toml::parse_file(file);
  } catch (const toml::parse_error& e) {
    throw UserError(fmt::format("{}:{}: {}", file, e.source().begin.line, e.description()));
  }
  SearchSpace s;
  s.file_ = file;
  const toml::table* space = doc["space"].as_table();
  if (space == nullptr) fail(file, 1, "space", "missing [space] table");
  for (const auto& [k, v] : *space) {
    const std::string key = "space." + std::string(k.str());
    if (k == "op") {
      s.op_ = text(file, v, key);
    } else if (k == "meaningful_on") {
      const toml::array* a = v.as_array();
      if (a == nullptr) fail(file, line_of(v), key, "expected an array of target kinds");
      for (const auto& x : *a) s.meaningful_on_.push_back(text(file, x, key));
    } else if (k == "description") {
      text(file, v, key);
    } else {
      fail(file, line_of(v), key, "unknown key (known: op, description, meaningful_on)");
    }
  }
  if (s.op_.empty()) fail(file, line_of(*space), "space.op", "missing");
  const toml::table* knobs = doc["knobs"].as_table();
  if (knobs == nullptr || knobs->empty()) fail(file, 1, "knobs", "missing [knobs.NAME] tables");
  for (const auto& [name_key, node] : *knobs) {
    const std::string name(name_key.str());
    const toml::table* t = node.as_table();
    if (t == nullptr) fail(file, line_of(node), "knobs." + name, "expected a table");
    Knob knob;
    knob.name = name;
    knob.line = line_of(node);
    knob.measurement = k3bench::MeasureSettings::is_key(name);
    for (const auto& [k, v] : *t) {
      const std::string key = "knobs." + name + "." + std::string(k.str());
      if (k == "values") {
        const toml::array* a = v.as_array();
        if (a == nullptr || a->empty()) fail(file, line_of(v), key, "expected a non-empty array");
        for (const auto& x : *a) knob.values.push_back(scalar(file, x, key));
      } else if (k == "range") {
        const toml::array* a = v.as_array();
        if (a == nullptr || a->size() != 2) fail(file, line_of(v), key, "expected [low, high] (numbers or expressions)");
        knob.range_lo = text(file, *a->get(0), key);
        knob.range_hi = text(file, *a->get(1), key);
      } else if (k == "scale") {
        const std::string scale = text(file, v, key);
        if (scale != "linear" && scale != "pow2") fail(file, line_of(v), key, "expected linear or pow2");
        knob.pow2 = scale == "pow2";
      } else if (k == "default") {
        knob.default_value = scalar(file, v, key);
      } else if (k == "when") {
        knob.when = text(file, v, key);
      } else if (k == "needs") {
        knob.needs = text(file, v, key);
      } else if (k == "emulated") {
        knob.emulated = text(file, v, key);
      } else {
        fail(file, line_of(v), key, "unknown key (known: values, range, scale, default, when, needs, emulated)");
      }
    }
    if (knob.values.empty() && knob.range_lo.empty())
      fail(file, knob.line, "knobs." + name, "needs values = [...] or range = [low, high]");
    if (knob.default_value.is_null()) {
      knob.default_value = knob.values.empty() ? nlohmann::json(knob.range_lo) : knob.values.front();
    }
    s.knobs_.push_back(std::move(knob));
  }
  if (const toml::table* d = doc["derived"].as_table()) {
    for (const auto& [k, v] : *d) s.derived_.push_back({std::string(k.str()), text(file, v, "derived." + std::string(k.str()))});
  }
  if (const toml::table* c = doc["constraints"].as_table()) {
    for (const auto& [k, v] : *c) {
      const std::string key = "constraints." + std::string(k.str());
      if (k != "rules") fail(file, line_of(v), key, "unknown key (known: rules)");
      const toml::array* a = v.as_array();
      if (a == nullptr) fail(file, line_of(v), key, "expected an array of expressions");
      for (const auto& r : *a) s.rules_.push_back({text(file, r, key), line_of(r)});
    }
  }
  for (const auto& [k, v] : doc) {
    if (k != "space" && k != "knobs" && k != "derived" && k != "constraints")
      fail(file, line_of(v), std::string(k.str()), "unknown table (known: space, knobs, derived, constraints)");
  }
  return s;
}

SearchSpace SearchSpace::for_op(const std::string& dir, const std::string& op) {
  return load(fmt::format("{}/{}.toml", dir, op));
}

void SearchSpace::check(const k3bench::OpSpec& op, const Variables& fact_names) const {
  if (op.name != op_) throw UserError(fmt::format("{}: space for op {} used with op {}", file_, op_, op.name));
  Variables names = fact_names;
  for (const auto& knob : knobs_) {
    const std::string where = fmt::format("{}:{}: knobs.{}", file_, knob.line, knob.name);
    if (!knob.measurement) {
      const k3params::ParamSpec* spec = op.param(knob.name);
      if (spec == nullptr) {
        throw UserError(fmt::format("{}: op {} has no parameter '{}' (k3bench --list-ops)", where, op_, knob.name));
      }
      // Listed values and the default must be values the runner accepts, in its own ranges.
      std::vector<nlohmann::json> check = knob.values;
      if (!knob.default_value.is_string() || spec->type == k3params::ParamSpec::Type::kEnum)
        check.push_back(knob.default_value);
      for (const auto& v : check) {
        try {
          k3params::normalise({*spec}, {{knob.name, k3params::value_text(v)}}, where);
        } catch (const k3params::ParamError& e) {
          throw UserError(e.what());
        }
      }
      if (!knob.range_lo.empty() && spec->type != k3params::ParamSpec::Type::kInt)
        throw UserError(fmt::format("{}: a range needs an integer parameter", where));
    } else if (!knob.values.empty()) {
      for (const auto& v : knob.values) {
        k3bench::MeasureSettings probe;
        probe.set(knob.name, k3params::value_text(v), where);
      }
    }
    names[knob.name] = 0;
    for (const auto& v : knob.values)
      if (v.is_string()) names[constant_name(knob.name, v.get<std::string>())] = 0;
  }
  for (const auto& [name, expr] : derived_) {
    if (auto why = check_expression(expr, names); !why.empty())
      throw UserError(fmt::format("{}: derived.{}: {}", file_, name, why));
    names[name] = 0;
  }
  auto check_expr = [&](const std::string& expr, const std::string& where) {
    if (expr.empty()) return;
    if (auto why = check_expression(expr, names); !why.empty()) throw UserError(fmt::format("{}: {}", where, why));
  };
  for (const auto& knob : knobs_) {
    const std::string where = fmt::format("{}:{}: knobs.{}", file_, knob.line, knob.name);
    check_expr(knob.range_lo, where + ".range");
    check_expr(knob.range_hi, where + ".range");
    check_expr(knob.when, where + ".when");
    check_expr(knob.emulated, where + ".emulated");
    if (knob.default_value.is_string() && !knob.range_lo.empty()) check_expr(knob.default_value.get<std::string>(), where + ".default");
  }
  for (const auto& [rule, line] : rules_) check_expr(rule, fmt::format("{}:{}: constraints.rules", file_, line));
}

// A range knob's bounds on these facts (UserError naming the knob when a bound does not evaluate).
std::pair<std::int64_t, std::int64_t> SearchSpace::range_bounds(const Knob& knob, const Variables& facts) const {
  const std::string where = fmt::format("{}:{}: knobs.{}.range", file_, knob.line, knob.name);
  double lo = 0, hi = 0;
  try {
    lo = evaluate(knob.range_lo, facts);
    hi = evaluate(knob.range_hi, facts);
  } catch (const std::invalid_argument& e) {
    throw UserError(fmt::format("{}: {}", where, e.what()));
  }
  // Clamped so that a bound like 1e30 counts instead of overflowing.
  constexpr double kLimit = 4e18;
  return {static_cast<std::int64_t>(std::ceil(std::clamp(lo, -kLimit, kLimit))),
          static_cast<std::int64_t>(std::floor(std::clamp(hi, -kLimit, kLimit)))};
}

std::vector<std::uint64_t> SearchSpace::value_counts(const Variables& facts) const {
  std::vector<std::uint64_t> out;
  for (const auto& knob : knobs_) {
    if (!knob.values.empty()) {
      out.push_back(knob.values.size());
      continue;
    }
    const auto [lo, hi] = range_bounds(knob, facts);
    std::uint64_t n = 0;
    if (hi >= lo && !knob.pow2) {
      n = static_cast<std::uint64_t>(hi - lo) + 1;
    } else if (hi >= lo) {
      for (std::int64_t p = 1; p > 0 && p <= hi; p *= 2) n += p >= lo ? 1 : 0;
    }
    if (n == 0)
      throw UserError(fmt::format("{}:{}: knobs.{}.range: [{}, {}] is empty on this target", file_, knob.line,
                                  knob.name, lo, hi));
    out.push_back(n);
  }
  return out;
}

std::uint64_t SearchSpace::product(const Variables& facts) const {
  std::uint64_t p = 1;
  for (const std::uint64_t n : value_counts(facts))
    p = n != 0 && p > std::numeric_limits<std::uint64_t>::max() / n ? std::numeric_limits<std::uint64_t>::max() : p * n;
  return p;
}

std::vector<std::vector<nlohmann::json>> SearchSpace::values(const Variables& facts) const {
  refuse_over_cap(facts);
  std::vector<std::vector<nlohmann::json>> out;
  for (const auto& knob : knobs_) {
    if (!knob.values.empty()) {
      out.push_back(knob.values);
      continue;
    }
    const auto [lo, hi] = range_bounds(knob, facts);
    std::vector<nlohmann::json> v;
    for (auto x = lo; x <= hi; x = knob.pow2 ? (x <= 0 ? 1 : x * 2) : x + 1) {
      if (knob.pow2 && (x & (x - 1)) != 0) continue;
      v.push_back(x);
    }
    out.push_back(std::move(v));
  }
  return out;
}

void SearchSpace::refuse_over_cap(const Variables& facts) const {
  const std::uint64_t n = product(facts);
  if (n > kMaxEnumerated)
    throw UserError(fmt::format("{}: {} combinations of knob values, more than the {} a search enumerates; "
                                "narrow a knob's values or range",
                                file_, n == std::numeric_limits<std::uint64_t>::max() ? std::string("over 1.8e19")
                                                                                        : std::to_string(n),
                                kMaxEnumerated));
}

SpaceCounts SearchSpace::count(const Variables& facts, const std::set<std::string>& flags) const {
  SpaceCounts c;
  c.product = product(facts);
  if (c.product > kMaxEnumerated) return c;  // counted, not enumerated
  enumerate(facts, flags, &c);
  return c;
}

Config SearchSpace::defaults(const Variables& facts) const {
  Config c = Config::object();
  for (const auto& knob : knobs_) {
    if (knob.default_value.is_string() && !knob.range_lo.empty()) {
      c[knob.name] = static_cast<std::int64_t>(std::llround(evaluate(knob.default_value.get<std::string>(), facts)));
    } else {
      c[knob.name] = knob.default_value;
    }
  }
  return c;
}

Variables SearchSpace::bind(const Config& config, const Variables& facts) const {
  Variables v = facts;
  for (const auto& knob : knobs_) {
    for (const auto& x : knob.values)
      if (x.is_string()) {
        const auto it = std::find(knob.values.begin(), knob.values.end(), x);
        v[constant_name(knob.name, x.get<std::string>())] = double(it - knob.values.begin());
      }
    const auto& value = config.at(knob.name);
    if (value.is_string()) {
      const auto it = std::find(knob.values.begin(), knob.values.end(), value);
      v[knob.name] = double(it - knob.values.begin());
    } else {
      v[knob.name] = value.get<double>();
    }
  }
  for (const auto& [name, expr] : derived_) v[name] = evaluate(expr, v);
  return v;
}

std::vector<Config> SearchSpace::enumerate(const Variables& facts, const std::set<std::string>& flags,
                                           SpaceCounts* counts) const {
  const auto vals = values(facts);
  const Config def = defaults(facts);
  SpaceCounts local;
  local.enumerated = true;
  local.product = 1;
  for (const auto& v : vals) local.product *= v.size();
  std::vector<Config> out;
  std::set<std::string> seen;
  std::vector<std::size_t> index(vals.size(), 0);
  for (bool more = !vals.empty(); more;) {
    Config c = Config::object();
    bool flagged_out = false;
    for (std::size_t i = 0; i < knobs_.size(); ++i) {
      c[knobs_[i].name] = vals[i][index[i]];
      if (!knobs_[i].needs.empty() && !flags.contains(knobs_[i].needs) && vals[i][index[i]] != def[knobs_[i].name])
        flagged_out = true;
    }
    // Inactive knobs are held at their defaults: configurations that differ only there are one.
    const Variables bound = bind(c, facts);
    for (const auto& knob : knobs_)
      if (!knob.when.empty() && evaluate(knob.when, bound) == 0) c[knob.name] = def[knob.name];
    const std::string key = config_key(c);
    if (seen.insert(key).second) {
      ++local.distinct;
      if (flagged_out) {
        ++local.excluded_by_flags;
      } else {
        const Variables b = bind(c, facts);
        bool ok = true;
        for (const auto& [rule, line] : rules_) ok = ok && evaluate(rule, b) != 0;
        if (ok) out.push_back(std::move(c));
      }
    }
    std::size_t i = index.size();
    while (i > 0 && ++index[i - 1] == vals[i - 1].size()) index[--i] = 0;
    more = i > 0;
  }
  local.valid = out.size();
  // The defaults first (when valid): strategies that start somewhere start there.
  const auto d = std::find_if(out.begin(), out.end(), [&](const Config& c) { return config_key(c) == config_key(def); });
  if (d != out.end()) std::rotate(out.begin(), d, d + 1);
  if (counts != nullptr) *counts = local;
  return out;
}

std::vector<std::string> SearchSpace::emulated_knobs(const Config& config, const Variables& facts) const {
  std::vector<std::string> out;
  const Config def = defaults(facts);
  const Variables b = bind(config, facts);
  for (const auto& knob : knobs_) {
    if (knob.emulated.empty() || config.at(knob.name) == def[knob.name]) continue;
    if (evaluate(knob.emulated, b) != 0) out.push_back(knob.name + "=" + k3params::value_text(config.at(knob.name)));
  }
  return out;
}

}  // namespace k3tuner
