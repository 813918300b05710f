#include "harness/host/bench/measure_settings.h"

#include <cctype>
#include <filesystem>

#include <fmt/format.h>

#include "harness/host/bench/provenance.h"
#include "harness/host/bench/user_error.h"

namespace k3bench {
namespace {

bool valid_cpus(const std::string& v) {
  if (v == "auto" || v == "none") return true;
  if (v.empty()) return false;
  for (char c : v)
    if (!std::isdigit(static_cast<unsigned char>(c)) && c != ',' && c != '-') return false;
  return true;
}

}  // namespace

const std::vector<k3params::ParamSpec>& MeasureSettings::keys() {
  using k3params::enum_param;
  using k3params::float_param;
  using k3params::int_param;
  static const std::vector<k3params::ParamSpec> specs = {
      int_param("repetitions", "measured repetitions per process",
                std::to_string(defaults::kRepetitions), 1, 100000),
      int_param("warmup", "untimed calls before measuring", "2", 0, 100000),
      float_param("min_time_s", "seconds per repetition", fmt::format("{}", defaults::kMinTimeS)),
      int_param("iterations", "fixed calls per repetition (0: calibrated)", "0", 0, 1 << 30),
      enum_param("check", "accuracy check before timing", "sample", {"sample", "full", "none"}),
      enum_param("path", "kernel layer", "auto", {"auto", "generic", "rvv", "ime2"}),
      enum_param("pool_wait", "idle workers spin (then park) or park at once", "spin",
                 {"spin", "park"}),
      enum_param("huge_pages", "2 MiB aligned, THP-advised large buffers", "on", {"on", "off"}),
      enum_param("weight_load",
                 "decode weight copies: mapped from the weight cache or made per process", "mmap",
                 {"read", "mmap"}),
      // cpus is free text (a CPU list), checked by valid_cpus.
  };
  return specs;
}

bool MeasureSettings::is_key(const std::string& name) {
  if (name == "cpus" || name == "table") return true;
  for (const auto& k : keys())
    if (k.name == name) return true;
  return false;
}

void MeasureSettings::set(const std::string& key, const std::string& value,
                          const std::string& where) {
  if (key == "cpus") {
    if (!valid_cpus(value))
      throw UserError(
          fmt::format("{}: cpus='{}' is not auto, none or a CPU list like 0-1", where, value));
    cpus = value;
    return;
  }
  if (key == "table") {  // free text: a file path, or none
    if (value.empty() || value == "none") {
      table.clear();
      table_sha256.clear();
      return;
    }
    std::error_code ec;
    if (!std::filesystem::is_regular_file(value, ec))
      throw UserError(fmt::format("{}: table='{}': no such file", where, value));
    table = std::filesystem::absolute(value).lexically_normal().string();
    table_sha256 = sha256_file(table);
    return;
  }
  const k3params::ParamSpec* spec = nullptr;
  for (const auto& k : keys())
    if (k.name == key) spec = &k;
  if (spec == nullptr)
    throw UserError(fmt::format("{}: '{}' is not a measurement setting", where, key));
  nlohmann::json typed;
  try {
    typed = k3params::normalise({*spec}, {{key, value}}, where).at(key);
  } catch (const k3params::ParamError& e) {
    throw UserError(e.what());
  }
  if (key == "repetitions")
    repetitions = typed.get<int>();
  else if (key == "warmup")
    warmup = typed.get<int>();
  else if (key == "min_time_s") {
    if (typed.get<double>() < 0) throw UserError(fmt::format("{}: min_time_s must be >= 0", where));
    min_time_s = typed.get<double>();
  } else if (key == "iterations")
    iterations = typed.get<std::int64_t>();
  else if (key == "check")
    check = typed.get<std::string>();
  else if (key == "path")
    path = typed.get<std::string>();
  else if (key == "pool_wait")
    pool_wait = typed.get<std::string>();
  else if (key == "huge_pages")
    huge_pages = typed.get<std::string>();
  else if (key == "weight_load")
    weight_load = typed.get<std::string>();
}

nlohmann::json MeasureSettings::to_json() const {
  nlohmann::json j = {{"repetitions", repetitions},
                      {"warmup", warmup},
                      {"min_time_s", min_time_s},
                      {"iterations", iterations},
                      {"check", check},
                      {"path", path},
                      {"extra_work_ns", extra_work_ns},
                      {"cpus", cpus},
                      {"pool_wait", pool_wait},
                      {"huge_pages", huge_pages},
                      {"weight_load", weight_load}};
  if (alternate_extra_work) j["extra_work_sides"] = "abba";  // absent otherwise: keys unchanged
  if (!params_b.is_null()) j["params_b"] = params_b;         // likewise
  if (!build_b.empty()) j["build_b"] = build_b;              // likewise
  if (!table.empty()) {
    j["table"] = table;
    j["table_sha256"] = table_sha256;
  }
  return j;
}

std::vector<std::string> MeasureSettings::runner_args(const CellSpec& cell,
                                                      std::int64_t calibrated) const {
  std::vector<std::string> a = {"--op",          cell.op,
                                "--shape",       to_kv(cell.shape),
                                "--params",      to_kv(cell.params),
                                "--reps",        std::to_string(repetitions),
                                "--warmup",      std::to_string(warmup),
                                "--check",       check,
                                "--path",        path,
                                "--cpus",        cpus,
                                "--pool-wait",   pool_wait,
                                "--huge-pages",  huge_pages,
                                "--weight-load", weight_load,
                                "--seed",        "1",
                                "--json"};
  const std::int64_t n = iterations > 0 ? iterations : calibrated;
  if (n > 0)
    a.insert(a.end(), {"--iterations", std::to_string(n)});
  else
    a.insert(a.end(), {"--min-time", fmt::format("{}", min_time_s)});
  if (extra_work_ns > 0) a.insert(a.end(), {"--extra-work-ns", fmt::format("{}", extra_work_ns)});
  if (alternate_extra_work) a.insert(a.end(), {"--extra-work-sides", "abba"});
  if (!params_b.is_null()) a.insert(a.end(), {"--params-b", to_kv(params_b)});
  if (!build_b.empty()) a.insert(a.end(), {"--build-b", build_b});
  if (!table.empty()) a.insert(a.end(), {"--table", table});
  return a;
}

}  // namespace k3bench
