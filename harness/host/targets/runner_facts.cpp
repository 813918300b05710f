#include "harness/host/targets/runner_facts.h"

#include <fmt/format.h>

namespace k3targets {
namespace {

constexpr int kFactsVersion = 1;  // harness/runner/facts.cpp writes this version

using json = nlohmann::json;

// The value at `path` (object keys), or a FactsError naming that path.
const json& at(const json& doc, std::initializer_list<const char*> path) {
  const json* v = &doc;
  std::string where;
  for (const char* key : path) {
    where += where.empty() ? key : std::string(".") + key;
    if (!v->is_object() || !v->contains(key))
      throw FactsError(fmt::format("runner facts: no field '{}'", where));
    v = &(*v)[key];
  }
  return *v;
}

template <typename T>
T get(const json& doc, std::initializer_list<const char*> path) {
  const json& v = at(doc, path);
  try {
    return v.get<T>();
  } catch (const json::exception&) {
    std::string where;
    for (const char* key : path) where += where.empty() ? key : std::string(".") + key;
    throw FactsError(
        fmt::format("runner facts: field '{}' has the wrong type ({})", where, v.type_name()));
  }
}

}  // namespace

const std::vector<std::string>& runner_facts_args() {
  static const std::vector<std::string> args{"--facts", "--json"};
  return args;
}

RunnerFacts parse_runner_facts(const std::string& text) {
  json doc;
  try {
    doc = json::parse(text);
  } catch (const json::exception& e) {
    throw FactsError(fmt::format("runner facts: not JSON ({})", e.what()));
  }
  const int version = get<int>(doc, {"facts_version"});
  if (version != kFactsVersion) {
    throw FactsError(fmt::format(
        "runner facts: facts_version {} (this k3tune reads {}): runner and k3tune are from "
        "different versions",
        version, kFactsVersion));
  }
  RunnerFacts f;
  f.cpu_model = get<std::string>(doc, {"environment", "cpu_model"});
  f.cpus_allowed = get<std::vector<int>>(doc, {"environment", "cpus_allowed"});
  f.cpus_online = get<int>(doc, {"environment", "cpus_online"});
  if (const json& v = at(doc, {"environment", "vlenb"}); !v.is_null())
    f.vlen_bits = get<int>(doc, {"environment", "vlenb"}) * 8;
  if (const json& v = at(doc, {"environment", "marchid"}); !v.is_null()) {
    std::string m = get<std::string>(doc, {"environment", "marchid"});
    for (auto& ch : m) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    f.marchid = m;  // lower case: /proc/cpuinfo spellings differ between kernels
  }
  f.hostname = get<std::string>(doc, {"environment", "hostname"});
  f.kernel = get<std::string>(doc, {"environment", "kernel"});
  f.runner_version = get<std::string>(doc, {"environment", "runner", "version"});
  f.source_revision = get<std::string>(doc, {"environment", "runner", "source_revision"});
  f.compiler = get<std::string>(doc, {"environment", "build", "compiler"});
  f.build_type = get<std::string>(doc, {"environment", "build", "build_type"});
  f.build_flags = get<std::string>(doc, {"environment", "build", "flags"});
  f.target_arch = get<std::string>(doc, {"environment", "build", "target_arch"});
  f.path = get<std::string>(doc, {"dispatch", "path"});
  f.path_reason = get<std::string>(doc, {"dispatch", "reason"});
  f.path_emulated = get<bool>(doc, {"dispatch", "emulated"});
  f.ime2_open = get<bool>(doc, {"ime2_gate", "open"});
  f.ime2_emulated = get<bool>(doc, {"ime2_gate", "emulated"});
  f.ime2_reason = get<std::string>(doc, {"ime2_gate", "reason"});
  f.tcm_backend = get<std::string>(doc, {"tcm", "backend"});
  f.tcm_reason = get<std::string>(doc, {"tcm", "reason"});
  if (f.tcm_backend != "off") {
    f.tcm_blocks = get<int>(doc, {"tcm", "geometry", "blocks"});
    f.tcm_block_bytes = get<long long>(doc, {"tcm", "geometry", "block_bytes"});
    f.tcm_stale_blocks = get<std::vector<int>>(doc, {"tcm", "stale_blocks"});
  }
  f.document = std::move(doc);
  return f;
}

RunnerFacts read_runner_facts(const Target& target) {
  const double timeout = target.config().timeout_s;
  const auto r = target.run(runner_facts_args(), ProcessOptions::with_timeout(timeout));
  if (!r.ok()) {
    throw FactsError(fmt::format("target {}: the runner {} does not describe itself: {}",
                                 target.name(), target.runner_path(), r.failure_reason(timeout)));
  }
  try {
    return parse_runner_facts(r.out);
  } catch (const FactsError& e) {
    throw FactsError(fmt::format("target {}: {}", target.name(), e.what()));
  }
}

}  // namespace k3targets
