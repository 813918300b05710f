// configs/targets.toml: [targets.NAME] tables with kind, variant, runner, qemu, vlen, timeout_s.
#include <toml++/toml.h>

#include <fmt/format.h>

#include "harness/host/targets/target.h"

namespace k3targets {
namespace {

[[noreturn]] void fail(const std::string& file, const toml::node& node, const std::string& key,
                       const std::string& what) {
  throw std::runtime_error(fmt::format("{}:{}: {}: {}", file, node.source().begin.line, key, what));
}

}  // namespace

std::map<std::string, TargetConfig> load_target_configs(const std::string& path) {
  toml::table doc;
  try {
    doc = toml::parse_file(path);
  } catch (const toml::parse_error& e) {
    throw std::runtime_error(
        fmt::format("{}:{}: {}", path, e.source().begin.line, e.description()));
  }
  std::map<std::string, TargetConfig> out;
  const toml::table* targets = doc["targets"].as_table();
  if (targets == nullptr)
    throw std::runtime_error(fmt::format("{}: no [targets.NAME] tables", path));
  for (const auto& [name_key, node] : *targets) {
    const std::string name(name_key.str());
    const toml::table* t = node.as_table();
    if (t == nullptr) fail(path, node, "targets." + name, "expected a table");
    TargetConfig c;
    std::optional<TargetKind> kind;
    c.name = name;
    c.defined_in = fmt::format("{}:{}", path, node.source().begin.line);
    for (const auto& [k, v] : *t) {
      const std::string key = "targets." + name + "." + std::string(k.str());
      if (k == "kind" || k == "variant" || k == "runner" || k == "qemu") {
        if (!v.is_string()) fail(path, v, key, "expected a string");
        const std::string s = *v.value<std::string>();
        if (k == "kind") {
          kind = target_kind(s);
        } else if (k == "variant")
          c.variant = s;
        else if (k == "runner")
          c.runner = s;
        else
          c.qemu = s;
      } else if (k == "vlen") {
        const auto vlen = v.value<int64_t>();
        if (!v.is_integer() || !vlen || *vlen < 128 || *vlen > 65536 ||
            (*vlen & (*vlen - 1)) != 0) {
          fail(path, v, key, "expected a power of two in [128, 65536]");
        }
        c.vlen = static_cast<int>(*vlen);
      } else if (k == "timeout_s") {
        const auto s = v.value<double>();
        if (!s || *s <= 0) fail(path, v, key, "expected a positive number of seconds");
        c.timeout_s = *s;
      } else {
        fail(path, v, key, "unknown key (known: kind, variant, runner, qemu, vlen, timeout_s)");
      }
    }
    if (!kind || *kind == TargetKind::kSsh)  // a board is a farm's, not a target of this file
      fail(path, node, "targets." + name + ".kind", "must be local or qemu");
    c.kind = *kind;
    if (c.variant.empty()) c.variant = c.kind == TargetKind::kLocal ? "host" : "rvv";
    out[name] = c;
  }
  return out;
}

}  // namespace k3targets
