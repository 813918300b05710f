#include "harness/runner/tuning_params.h"

#include <charconv>

#include "k3k/tuning.h"

namespace k3runner {

nlohmann::json load_tuning_table_report(const std::string& table_path) {
  if (!table_path.empty()) k3k::load_tuning_table(table_path);
  const k3k::TableLoad load = k3k::last_table_load();
  if (load.source.empty()) return nullptr;
  nlohmann::json out = {{"table", load.source}, {"loaded", load.loaded}};
  if (!load.problem.empty()) out["refused"] = load.problem;
  return out;
}

nlohmann::json apply_tuning_table(const std::string& table_path, const OpInfo& op,
                                  const std::map<std::string, std::string>& shape,
                                  k3k::KernelPath path, std::map<std::string, std::string>& given) {
  nlohmann::json out = load_tuning_table_report(table_path);
  if (out.is_null()) return out;
  const k3k::TuningTable* table = k3k::active_tuning_table();
  const k3k::TuningEntry* entry = nullptr;
  if (table != nullptr) {
    std::map<std::string, std::int64_t> numeric;
    for (const auto& [k, v] : shape) {
      std::int64_t x = 0;
      const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), x);
      if (ec == std::errc() && end == v.data() + v.size()) numeric[k] = x;
    }
    entry = table->find(op.name, path, numeric);
  }
  out["entry"] = entry != nullptr ? nlohmann::json(entry->id) : nlohmann::json(nullptr);
  nlohmann::json sources = nlohmann::json::object();
  for (const auto& p : op.params) {
    if (given.contains(p.name)) {
      sources[p.name] = "command line";
      continue;
    }
    const auto it = entry != nullptr ? entry->params.find(p.name) : decltype(entry->params.end()){};
    if (entry != nullptr && it != entry->params.end()) {
      given[p.name] = std::holds_alternative<std::int64_t>(it->second)
                          ? std::to_string(std::get<std::int64_t>(it->second))
                          : std::get<std::string>(it->second);
      // A rule's leaf is said apart from a measured entry: its values were predicted, not measured.
      sources[p.name] = (entry->from_rule ? "rule " : "table ") + entry->id;
    } else {
      sources[p.name] = "default";
    }
  }
  out["sources"] = sources;
  return out;
}

}  // namespace k3runner
