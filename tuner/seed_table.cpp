#include "tuner/seed_table.h"

#include <regex>


#include "k3k/tuning.h"

namespace k3tuner {
namespace {

std::set<std::string> names_in(const std::string& expression) {
  static const std::regex identifier("[A-Za-z_][A-Za-z0-9_]*");
  std::set<std::string> out;
  for (std::sregex_iterator it(expression.begin(), expression.end(), identifier), end; it != end;
       ++it)
    out.insert(it->str());
  return out;
}

nlohmann::json fact(const nlohmann::json& fp, const char* key) {
  return fp.value(key, nlohmann::json());
}

}  // namespace

std::map<std::string, std::set<std::string>> differing_facts(const nlohmann::json& seed,
                                                             const nlohmann::json& here) {
  std::map<std::string, std::set<std::string>> out;
  if (fact(seed, "cpus") != fact(here, "cpus")) out["cpus"] = {"cpus"};
  if (fact(seed, "vlen") != fact(here, "vlen")) out["vlen"] = {"vlen"};
  if (fact(seed, "marchid") != fact(here, "marchid")) out["marchid"] = {"ime2"};
  if (seed.value("tcm", nlohmann::json::object()) != here.value("tcm", nlohmann::json::object()))
    out["tcm"] = {"tcm_blocks", "tcm_block_bytes", "tcm_emulated"};
  return out;
}

std::set<std::string> knob_dependencies(const SearchSpace& space, const std::string& name) {
  const Knob* knob = nullptr;
  for (const auto& k : space.knobs())
    if (k.name == name) knob = &k;
  if (knob == nullptr) return {};
  std::set<std::string> deps;
  auto add = [&](const std::string& text) {
    const auto n = names_in(text);
    deps.insert(n.begin(), n.end());
  };
  add(knob->range_lo);
  add(knob->range_hi);
  if (knob->default_value.is_string()) add(knob->default_value.get<std::string>());
  add(knob->when);
  add(knob->emulated);
  // A derived quantity stands for the names it is computed from (derived before it, in order).
  std::map<std::string, std::set<std::string>> derived;
  for (const auto& [d, expr] : space.derived()) {
    std::set<std::string> uses;
    for (const auto& n : names_in(expr)) {
      if (auto it = derived.find(n); it != derived.end())
        uses.insert(it->second.begin(), it->second.end());
      else
        uses.insert(n);
    }
    derived[d] = uses;
  }
  for (const auto& [rule, line] : space.rules()) {
    (void)line;
    std::set<std::string> uses;
    for (const auto& n : names_in(rule)) {
      if (auto it = derived.find(n); it != derived.end())
        uses.insert(it->second.begin(), it->second.end());
      else
        uses.insert(n);
    }
    if (uses.contains(name)) deps.insert(uses.begin(), uses.end());
  }
  deps.erase(name);
  return deps;
}

nlohmann::json SeedPlan::to_json() const {
  return {{"entry", entry_id.empty() ? nlohmann::json(nullptr) : nlohmann::json(entry_id)},
          {"held", held},
          {"searched", searched}};
}

SeedPlan plan_seed(const k3k::TuningTable& seed, const SearchSpace& space, const std::string& op,
                   const std::string& path, const std::map<std::string, std::int64_t>& shape,
                   const std::map<std::string, std::set<std::string>>& differing,
                   const Variables& facts) {
  const k3k::TuningEntry* entry = nullptr;
  if (auto p = k3k::parse_kernel_path(path)) entry = seed.find(op, *p, shape);
  for (const auto p : {k3k::KernelPath::kIme2, k3k::KernelPath::kRvv, k3k::KernelPath::kGeneric})
    if (entry == nullptr) entry = seed.find(op, p, shape);
  SeedPlan plan;
  std::set<std::string> moved;  // the space variables of the facts that differ
  for (const auto& [f, vars] : differing) moved.insert(vars.begin(), vars.end());
  const auto values = space.values(facts);
  for (std::size_t i = 0; i < space.knobs().size(); ++i) {
    const Knob& knob = space.knobs()[i];
    bool hold = entry != nullptr && !knob.measurement && entry->params.contains(knob.name);
    if (hold) {
      for (const auto& d : knob_dependencies(space, knob.name))
        if (moved.contains(d)) hold = false;
    }
    if (hold) {
      const auto& v = entry->params.at(knob.name);
      const nlohmann::json value = std::holds_alternative<std::int64_t>(v)
                                       ? nlohmann::json(std::get<std::int64_t>(v))
                                       : nlohmann::json(std::get<std::string>(v));
      if (std::find(values[i].begin(), values[i].end(), value) != values[i].end())
        plan.held[knob.name] = value;
      else
        hold = false;  // the seed's value is not a candidate here
    }
    if (!hold) plan.searched.push_back(knob.name);
  }
  if (entry != nullptr) plan.entry_id = entry->id;
  return plan;
}

}  // namespace k3tuner
