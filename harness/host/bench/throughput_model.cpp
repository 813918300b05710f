#include "harness/host/bench/throughput_model.h"

#include <toml++/toml.h>

#include <filesystem>
#include <limits>

#include <fmt/format.h>

#include "harness/host/bench/user_error.h"

namespace k3bench {
namespace {

struct FactSpec {
  const char* name;
  double ThroughputFacts::*field;
};

constexpr FactSpec kFacts[] = {{"clock_ghz", &ThroughputFacts::clock_ghz},
                               {"cores", &ThroughputFacts::cores},
                               {"parallel_efficiency", &ThroughputFacts::parallel_efficiency},
                               {"scalar_ipc", &ThroughputFacts::scalar_ipc},
                               {"vector_cpi", &ThroughputFacts::vector_cpi},
                               {"ime2_cpi", &ThroughputFacts::ime2_cpi},
                               {"bandwidth_gbs", &ThroughputFacts::bandwidth_gbs}};

}  // namespace

ThroughputFacts load_throughput_facts(const std::string& file) {
  if (!std::filesystem::exists(file)) throw UserError(fmt::format("{}: no such file", file));
  toml::table doc;
  try {
    doc = toml::parse_file(file);
  } catch (const toml::parse_error& e) {
    throw UserError(fmt::format("{}:{}: {}", file, e.source().begin.line, e.description()));
  }
  const toml::table* t = doc["throughput_model"].as_table();
  if (t == nullptr) throw UserError(fmt::format("{}: throughput_model: missing table", file));
  const int table_line = static_cast<int>(t->source().begin.line);
  ThroughputFacts f;
  f.file = file;
  for (const auto& [k, v] : *t) {
    const std::string key(k.str());
    bool known = false;
    for (const auto& spec : kFacts)
      known = known || key == spec.name || key == std::string(spec.name) + "_source";
    if (!known)
      throw UserError(
          fmt::format("{}:{}: throughput_model.{}: unknown key", file, v.source().begin.line, key));
  }
  for (const auto& spec : kFacts) {
    const std::string key = spec.name;
    const toml::node* v = t->get(key);
    const auto x = v != nullptr ? v->value<double>() : std::nullopt;
    const int line = v != nullptr ? static_cast<int>(v->source().begin.line) : table_line;
    if (!x || !(*x > 0) || *x == std::numeric_limits<double>::infinity())
      throw UserError(
          fmt::format("{}:{}: throughput_model.{}: expected a positive number", file, line, key));
    const auto source = t->get(key + "_source") != nullptr
                            ? t->get(key + "_source")->value_exact<std::string>()
                            : std::nullopt;
    if (!source || source->empty())
      throw UserError(
          fmt::format("{}:{}: throughput_model.{}_source: every fact names its "
                      "source (or says it is an assumption)",
                      file, line, key));
    f.*spec.field = *x;
    f.facts.push_back({key, fmt::format("{:g}", *x), *source});
  }
  return f;
}

ThroughputEstimate estimate_throughput(const ThroughputFacts& f, const TokenCost& c) {
  ThroughputEstimate e;
  e.cycles_per_token = c.scalar / f.scalar_ipc + c.vector * f.vector_cpi + c.ime2 * f.ime2_cpi;
  const double inf = std::numeric_limits<double>::infinity();
  e.compute_tokens_per_s = e.cycles_per_token > 0 ? f.clock_ghz * 1e9 * f.cores *
                                                        f.parallel_efficiency / e.cycles_per_token
                                                  : inf;
  e.bandwidth_tokens_per_s = c.bytes > 0 ? f.bandwidth_gbs * 1e9 / c.bytes : inf;
  e.bound = e.compute_tokens_per_s <= e.bandwidth_tokens_per_s ? "compute" : "bandwidth";
  e.tokens_per_s = std::min(e.compute_tokens_per_s, e.bandwidth_tokens_per_s);
  return e;
}

}  // namespace k3bench
