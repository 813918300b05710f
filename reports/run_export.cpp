#include "reports/run_export.h"

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <fstream>

#include <fmt/format.h>

#include "harness/host/bench/json_schema.h"
#include "harness/host/bench/model_runs.h"
#include "harness/host/stats/stats.h"
#include "harness/host/store/result_reads.h"
#include "reports/report_error.h"

namespace k3reports {
namespace {

using nlohmann::json;

// `j[key]` when j is an object that has it, else null (the runner's report is read, not trusted).
json member(const json& j, const char* key) {
  return j.is_object() && j.contains(key) ? j[key] : json(nullptr);
}

// The run's own provenance, after Google Benchmark's fields (readers ignore fields they do not
// know).
void add_provenance(json& context, const k3verdict::RunData& run) {
  const k3verdict::BuildInfo* own = run.build(run.build_hash);
  context["k3tune"] = {
      {"run_uuid", run.run_uuid},
      {"command", run.command},
      {"target", run.target},
      {"status", run.status},
      {"cpu_model", run.cpu_model},
      {"marchid", run.marchid},
      {"arch", run.arch},
      {"build_hash", run.build_hash},
      {"variant", own ? own->variant : ""},
      {"source_revision", own ? own->source_revision : ""},
      {"source_dirty", own && own->source_dirty ? json(*own->source_dirty) : json(nullptr)},
      {"compiler", own ? own->compiler : ""},
      {"flags", own ? own->flags : ""}};
  context["k3tune"]["builds"] = json::array();
  for (const auto& b : run.builds)
    context["k3tune"]["builds"].push_back({{"build_hash", b.build_hash},
                                           {"label", b.label},
                                           {"variant", b.variant},
                                           {"source_revision", b.source_revision}});
}

// Google Benchmark's context block: the machine as the runner described it, and the run's own
// provenance (fields of its own after Google Benchmark's, which readers ignore).
json gbench_context(const k3verdict::RunData& run) {
  const json& env = run.environment;
  const k3verdict::BuildInfo* own = run.build(run.build_hash);
  json context = {{"date", run.started_at},
                  {"host_name", run.host},
                  {"executable", own ? own->binary_path : ""}};
  add_provenance(context, run);
  if (!env.is_object()) return context;
  // CPUs the runner saw online, the frequency it read before measuring (kHz per CPU; the highest,
  // as MHz), caches when it listed them, and its own build type.
  if (env.contains("cpus_online")) {
    const json& n = env["cpus_online"];
    if (n.is_number_integer()) context["num_cpus"] = n;
    if (n.is_string()) context["num_cpus"] = std::atoi(n.get<std::string>().c_str());
  }
  const json khz = member(member(env, "readings_before"), "cpufreq_khz");
  double highest = 0;
  if (khz.is_object())
    for (const auto& [cpu, v] : khz.items())
      if (v.is_number()) highest = std::max(highest, v.get<double>());
  if (highest > 0) context["mhz_per_cpu"] = std::round(highest / 1000.0);
  if (env.contains("caches") && env["caches"].is_array()) context["caches"] = env["caches"];
  const json type = member(member(env, "build"), "build_type");
  std::string build_type = type.is_string() ? type.get<std::string>() : "";
  for (char& ch : build_type) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  if (!build_type.empty()) context["library_build_type"] = build_type;
  return context;
}

int threads_of(const k3verdict::CellFigures& cell) {
  if (cell.params.is_object() && cell.params.contains("workers") &&
      cell.params["workers"].is_number_integer())
    return std::max(1, cell.params["workers"].get<int>());
  return 1;
}

// The aggregates Google Benchmark adds after a benchmark's repetitions (its statistics.cc:
// mean, median, sample standard deviation, coefficient of variation as a fraction).
void add_aggregates(json& out, const json& first, const std::vector<double>& real,
                    const std::vector<double>& cpu) {
  const auto n = static_cast<std::int64_t>(real.size());
  const auto cv = [](const std::vector<double>& x) {
    const double m = k3stats::mean(x);
    return m != 0 ? k3stats::sample_stddev(x) / m : 0.0;
  };
  const std::vector<std::tuple<const char*, double, double, const char*>> rows = {
      {"mean", k3stats::mean(real), k3stats::mean(cpu), "time"},
      {"median", k3stats::median(real), k3stats::median(cpu), "time"},
      {"stddev", k3stats::sample_stddev(real), k3stats::sample_stddev(cpu), "time"},
      {"cv", cv(real), cv(cpu), "percentage"}};
  for (const auto& [name, r, c, unit] : rows) {
    json a = first;
    a.erase("repetition_index");
    a["name"] = first["run_name"].get<std::string>() + "_" + name;
    a["run_type"] = "aggregate";
    a["aggregate_name"] = name;
    a["aggregate_unit"] = unit;
    a["iterations"] = n;
    a["real_time"] = r;
    a["cpu_time"] = c;
    out.push_back(std::move(a));
  }
}

// `amount` per call as a rate per second of the cell's mean time, with the run's interval of the
// mean mapped through amount / time (a rate falls as the time grows: the interval's ends swap).
json per_second(double amount, const k3verdict::CellFigures& cell) {
  json rate = {{"value", amount / (*cell.mean_ns * 1e-9)}};
  if (cell.ci_low_ns && cell.ci_high_ns && *cell.ci_low_ns > 0) {
    rate["lower_value"] = amount / (*cell.ci_high_ns * 1e-9);
    rate["upper_value"] = amount / (*cell.ci_low_ns * 1e-9);
  }
  return rate;
}

}  // namespace

std::string export_name(const k3verdict::CellFigures& cell) {
  std::string name;
  for (char ch : cell.label) {
    if (ch == '[' || ch == ']') continue;
    name += ch == ' ' ? '/' : ch;
  }
  return name;
}

json gbench_json(k3store::Connection& db, const k3verdict::RunData& run) {
  if (run.per_call.instructions)
    throw ReportError(fmt::format(
        "run {} counts instructions (k3tune count), which are not times: export it with "
        "--format bmf",
        run.run_uuid));
  json benchmarks = json::array();
  json failed = json::array();
  int family = 0;
  for (const auto& cell : run.cells) {
    const auto samples = k3store::counted_sample_timings(db, run.run_uuid, cell.cell_key);
    if (!cell.ok || samples.empty()) {
      failed.push_back({{"name", export_name(cell)},
                        {"reason", cell.ok ? "no undisturbed repetition" : cell.reason}});
      continue;
    }
    const std::string name = export_name(cell);
    std::vector<double> real, cpu;
    for (std::size_t i = 0; i < samples.size(); ++i) {
      const auto& s = samples[i];
      real.push_back(s.ns);
      cpu.push_back(s.cpu_ns);
      benchmarks.push_back({{"name", name},
                            {"family_index", family},
                            {"per_family_instance_index", 0},
                            {"run_name", name},
                            {"run_type", "iteration"},
                            {"repetitions", static_cast<std::int64_t>(samples.size())},
                            {"repetition_index", static_cast<std::int64_t>(i)},
                            {"threads", threads_of(cell)},
                            {"iterations", s.iterations},
                            {"real_time", s.ns},
                            {"cpu_time", s.cpu_ns},
                            {"time_unit", "ns"},
                            {"process_index", s.process_index}});
    }
    json first = benchmarks.back();
    first.erase("process_index");
    add_aggregates(benchmarks, first, real, cpu);
    ++family;
  }
  json context = gbench_context(run);
  context["k3tune"]["failed_cells"] = failed;
  return {{"context", context}, {"benchmarks", benchmarks}};
}

json bmf_json(const k3verdict::RunData& run) {
  json doc = json::object();
  for (const auto& cell : run.cells) {
    if (!cell.ok || !cell.mean_ns || !(*cell.mean_ns > 0)) continue;
    json measures = json::object();
    const double v = *cell.mean_ns;
    if (run.per_call.instructions) {
      measures["instructions"] = {{"value", v}};
    } else {
      json latency = {{"value", v}};
      if (cell.ci_low_ns && cell.ci_high_ns) {
        latency["lower_value"] = *cell.ci_low_ns;
        latency["upper_value"] = *cell.ci_high_ns;
      }
      measures["latency"] = latency;
      if (cell.ops_per_call) measures["throughput"] = per_second(*cell.ops_per_call, cell);
      // A whole-model cell's tokens per second, as `k3tune model` prints them.
      if (const auto tokens = k3bench::model_tokens_per_call(cell.op, cell.shape); tokens > 0)
        measures["tokens_per_s"] = per_second(static_cast<double>(tokens), cell);
    }
    if (cell.bytes_per_call) measures["bytes"] = {{"value", *cell.bytes_per_call}};
    doc[export_name(cell)] = measures;
  }
  return doc;
}

std::vector<std::string> schema_problems(const json& doc, const std::string& schema_file) {
  json schema_doc;
  {
    std::ifstream f(schema_file);
    if (!f) throw ReportError(fmt::format("{}: cannot read the schema", schema_file));
    schema_doc = json::parse(f, nullptr, false);
    if (schema_doc.is_discarded()) throw ReportError(fmt::format("{}: not JSON", schema_file));
  }
  const k3bench::SchemaCheck check = k3bench::check_against_schema(schema_doc, doc);
  std::vector<std::string> problems = check.problems;
  if (!check.valid && problems.empty()) problems.push_back("does not conform to " + schema_file);
  return problems;
}

}  // namespace k3reports
