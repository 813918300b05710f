#include "harness/host/verdict/regression_config.h"

#include <fmt/format.h>

#include "harness/host/verdict/toml_input.h"

namespace k3verdict {
namespace {

bool is_op_name(const std::string& s) {
  if (s.empty()) return false;
  for (char c : s)
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) return false;
  return true;
}

double fraction(const std::string& path, const toml::node& v, const std::string& key, double lo,
                double hi) {
  const double x = toml_number(path, v, key);
  if (!(x >= lo && x <= hi))
    toml_fail(path, v, key, fmt::format("expected a value in [{}, {}]", lo, hi));
  return x;
}

int count(const std::string& path, const toml::node& v, const std::string& key) {
  if (!v.is_integer() || *v.value<std::int64_t>() < 2 || *v.value<std::int64_t>() > 1000)
    toml_fail(path, v, key, "expected an integer in [2, 1000]");
  return static_cast<int>(*v.value<std::int64_t>());
}

void read_timing(const std::string& path, const toml::table& t, RegressionConfig& c) {
  for (const auto& [k, v] : t) {
    const std::string key = "timing." + std::string(k.str());
    if (k == "min_effect") {
      c.min_effect = fraction(path, v, key, 0.0, 1.0);
    } else if (k == "alpha") {
      c.alpha = fraction(path, v, key, 1e-6, 0.5);
    } else if (k == "power") {
      c.power = fraction(path, v, key, 0.5, 0.999);
    } else if (k == "use_noise_floor") {
      c.use_noise_floor = toml_bool(path, v, key);
    } else if (k == "estimator") {
      if (!v.is_string()) toml_fail(path, v, key, "expected \"hodges-lehmann\" or \"mean\"");
      try {
        c.estimator = k3stats::paired_estimator_from(*v.value<std::string>());
      } catch (const std::invalid_argument& e) {
        toml_fail(path, v, key, e.what());
      }
    } else if (k == "ops") {
      if (!v.is_table()) toml_fail(path, v, key, "expected a table of op = minimum effect");
      for (const auto& [op, x] : *v.as_table()) {
        const std::string name(op.str());
        if (!is_op_name(name)) toml_fail(path, x, key + "." + name, "not an op name");
        c.op_min_effect[name] = fraction(path, x, key + "." + name, 0.0, 1.0);
      }
    } else {
      toml_fail(path, v, key,
                "unknown key (known: min_effect, alpha, power, use_noise_floor, estimator, ops)");
    }
  }
}

void read_accuracy(const std::string& path, const toml::table& t, RegressionConfig& c) {
  for (const auto& [k, v] : t) {
    const std::string key = "accuracy." + std::string(k.str());
    if (k == "max_ratio_increase") {
      c.max_ratio_increase = fraction(path, v, key, 0.0, 1e6);
    } else if (k == "identical_outputs") {
      if (!v.is_array()) toml_fail(path, v, key, "expected a list of op names");
      c.identical_outputs.clear();
      for (const auto& op : *v.as_array()) {
        const std::string name = toml_string(path, op, key);
        if (!is_op_name(name)) toml_fail(path, op, key, "'" + name + "' is not an op name");
        c.identical_outputs.insert(name);
      }
    } else {
      toml_fail(path, v, key, "unknown key (known: max_ratio_increase, identical_outputs)");
    }
  }
}

void read_confirm(const std::string& path, const toml::table& t, RegressionConfig& c) {
  for (const auto& [k, v] : t) {
    const std::string key = "confirm." + std::string(k.str());
    if (k == "processes") {
      c.confirm_processes = count(path, v, key);
    } else if (k == "max_processes") {
      c.confirm_max_processes = count(path, v, key);
    } else if (k == "target_ci") {
      c.confirm_target_ci = fraction(path, v, key, 0.0, 0.99);
    } else {
      toml_fail(path, v, key, "unknown key (known: processes, max_processes, target_ci)");
    }
  }
  if (c.confirm_max_processes < c.confirm_processes) {
    toml_fail(path, t, "confirm.max_processes",
              fmt::format("{} is below confirm.processes {}", c.confirm_max_processes,
                          c.confirm_processes));
  }
}

}  // namespace

double RegressionConfig::min_effect_for(const std::string& op) const {
  const auto it = op_min_effect.find(op);
  return it == op_min_effect.end() ? min_effect : it->second;
}

RegressionConfig load_regression_config(const std::string& path) {
  const toml::table doc = parse_toml_file(path);
  RegressionConfig c;
  c.source = path;
  for (const auto& [k, v] : doc) {
    const std::string key(k.str());
    if (!v.is_table())
      toml_fail(path, v, key, "expected a table ([timing], [accuracy], [confirm])");
    if (k == "timing")
      read_timing(path, *v.as_table(), c);
    else if (k == "accuracy")
      read_accuracy(path, *v.as_table(), c);
    else if (k == "confirm")
      read_confirm(path, *v.as_table(), c);
    else
      toml_fail(path, v, key, "unknown table (known: timing, accuracy, confirm)");
  }
  return c;
}

}  // namespace k3verdict
