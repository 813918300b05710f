#include "harness/host/targets/build_presets.h"

#include <fstream>
#include <functional>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace k3targets {
namespace {

using json = nlohmann::json;

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  for (auto at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size()))
    s.replace(at, from.size(), to);
  return s;
}

// The presets' raw objects by name, from the file's configurePresets.
std::map<std::string, json> read_raw(const std::string& file, std::vector<std::string>& order) {
  std::ifstream in(file);
  if (!in) throw PresetError(fmt::format("{}: cannot read the build presets", file));
  json doc;
  try {
    doc = json::parse(in);
  } catch (const json::exception& e) {
    throw PresetError(fmt::format("{}: not JSON ({})", file, e.what()));
  }
  if (!doc.contains("configurePresets") || !doc["configurePresets"].is_array())
    throw PresetError(fmt::format("{}: no configurePresets array", file));
  std::map<std::string, json> raw;
  for (const auto& p : doc["configurePresets"]) {
    if (!p.contains("name") || !p["name"].is_string())
      throw PresetError(fmt::format("{}: a configure preset without a name", file));
    const std::string name = p["name"];
    if (!raw.emplace(name, p).second)
      throw PresetError(fmt::format("{}: preset '{}' is defined twice", file, name));
    order.push_back(name);
  }
  return raw;
}

}  // namespace

std::vector<BuildPreset> load_build_presets(const std::string& root) {
  const std::string file = root + "/CMakePresets.json";
  std::vector<std::string> order;
  const auto raw = read_raw(file, order);
  // CMake's rule: a preset's own fields win, then its `inherits` in list order (the first wins).
  std::function<void(const std::string&, BuildPreset&, std::set<std::string>&)> resolve;
  resolve = [&](const std::string& name, BuildPreset& out, std::set<std::string>& seen) {
    const auto it = raw.find(name);
    if (it == raw.end())
      throw PresetError(fmt::format("{}: preset '{}' is inherited but not defined", file, name));
    if (!seen.insert(name).second)
      throw PresetError(fmt::format("{}: preset '{}' inherits itself", file, name));
    const json& p = it->second;
    if (out.binary_dir.empty()) out.binary_dir = p.value("binaryDir", "");
    if (out.toolchain_file.empty()) out.toolchain_file = p.value("toolchainFile", "");
    if (p.contains("vendor") && p["vendor"].contains("k3tune")) {  // field by field, like cache
      const json& k3 = p["vendor"]["k3tune"];
      if (out.kind.empty()) out.kind = k3.value("kind", "");
      if (out.count_path.empty()) out.count_path = k3.value("count_path", "");
    }
    const json cache = p.value("cacheVariables", json::object());  // items() needs a live object
    for (const auto& [k, v] : cache.items())
      if (!out.cache.count(k)) out.cache[k] = v.is_string() ? v.get<std::string>() : v.dump();
    std::vector<std::string> parents;
    if (p.contains("inherits"))
      parents = p["inherits"].is_string() ? std::vector<std::string>{p["inherits"]}
                                          : p["inherits"].get<std::vector<std::string>>();
    for (const auto& parent : parents) resolve(parent, out, seen);
    seen.erase(name);
  };
  std::vector<BuildPreset> out;
  for (const auto& name : order) {
    const json& p = raw.at(name);
    if (p.value("hidden", false)) continue;
    BuildPreset b;
    b.name = name;
    b.description = p.value("description", "");
    std::set<std::string> seen;
    resolve(name, b, seen);
    if (b.binary_dir.empty())
      throw PresetError(fmt::format("{}: preset '{}' has no binaryDir", file, name));
    for (auto* s : {&b.binary_dir, &b.toolchain_file}) {
      *s = replace_all(*s, "${sourceDir}", root);
      *s = replace_all(*s, "${presetName}", name);
    }
    out.push_back(std::move(b));
  }
  return out;
}

BuildPreset find_build_preset(const std::string& root, const std::string& name) {
  std::string known;
  for (auto& p : load_build_presets(root)) {
    if (p.name == name) return p;
    known += (known.empty() ? "" : ", ") + p.name;
  }
  throw PresetError(
      fmt::format("{}/CMakePresets.json: no preset '{}' (known: {})", root, name, known));
}

std::vector<std::string> runner_variants(const std::string& root) {
  std::vector<std::string> out;
  for (const auto& p : load_build_presets(root))
    if (p.kind == "runner") out.push_back(p.name);
  return out;
}

std::string runner_binary(const std::string& binary_dir) {
  return binary_dir + "/harness/runner/k3bench";
}

std::string variant_runner(const std::string& root, const std::string& variant) {
  const BuildPreset p = find_build_preset(root, variant);
  if (p.kind != "runner")
    throw PresetError(
        fmt::format("{}/CMakePresets.json: preset '{}' is not a runner variant", root, variant));
  return runner_binary(p.binary_dir);
}

}  // namespace k3targets
