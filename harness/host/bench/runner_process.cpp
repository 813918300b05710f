#include "harness/host/bench/runner_process.h"

#include <cmath>
#include <stdexcept>

#include <fmt/format.h>

#include "harness/host/stats/stats.h"

namespace k3bench {

double ProcessOutcome::mean_ns() const {
  std::vector<double> t;
  for (const auto& s : samples) t.push_back(s.ns);
  return k3stats::mean(t);
}

bool ProcessOutcome::side_means(double& a_ns, double& b_ns) const {
  if (sides.size() != samples.size()) return false;
  double log_a = 0, log_b = 0;
  int na = 0, nb = 0;
  for (std::size_t i = 0; i < samples.size(); ++i) {
    if (sides[i] == 'A') log_a += std::log(samples[i].ns), ++na;
    if (sides[i] == 'B') log_b += std::log(samples[i].ns), ++nb;
  }
  if (na == 0 || nb == 0) return false;
  a_ns = std::exp(log_a / na);
  b_ns = std::exp(log_b / nb);
  return true;
}

std::pair<ProcessOutcome, ProcessOutcome> split_build_sides(const ProcessOutcome& both) {
  if (both.sides.size() != both.samples.size())
    throw std::invalid_argument("split_build_sides: the samples carry no sides");
  auto side = [&](char which) {
    ProcessOutcome o = both;
    o.samples.clear();
    o.sides.clear();
    o.kernel_ns = 0;
    o.disturbed = false;
    nlohmann::json run_delay = nlohmann::json::array(), steal = nlohmann::json::array();
    const nlohmann::json& sched = both.runner.value("scheduling", nlohmann::json::object());
    for (std::size_t i = 0; i < both.samples.size(); ++i) {
      if (both.sides[i] != which) continue;
      const auto& s = both.samples[i];
      o.samples.push_back(s);
      o.kernel_ns += s.ns * double(s.iterations);
      o.disturbed = o.disturbed || !s.flags.empty();
      if (sched.contains("run_delay_ns") && i < sched["run_delay_ns"].size()) {
        run_delay.push_back(sched["run_delay_ns"][i]);
        steal.push_back(sched["steal_ns"][i]);
      }
    }
    // Outliers are flagged within a side: the other build's times are another population.
    std::vector<double> t;
    for (auto& s : o.samples) s.outlier = false, t.push_back(s.ns);
    for (std::size_t i : k3stats::tukey_outliers(t)) o.samples[i].outlier = true;
    o.runner["scheduling"] = {{"run_delay_ns", run_delay}, {"steal_ns", steal}};
    o.wall_ns = both.wall_ns / 2;
    o.warmup_s = both.warmup_s / 2;
    if (o.timing.is_object()) {
      o.timing["shared_process"] = true;
      o.timing["process_wall_s"] = double(both.wall_ns) * 1e-9;
    }
    return o;
  };
  ProcessOutcome a = side('A'), b = side('B');
  const nlohmann::json build_b = both.runner.value("build_b", nlohmann::json::object());
  a.runner["within_process"] = {{"side", "A"}, {"other_build", build_b.value("plugin", "")}};
  b.runner["within_process"] = {{"side", "B"}, {"plugin", build_b.value("plugin", "")}};
  b.path = build_b.value("path", both.path);
  // Side B's facts, where the runner's document keeps them: each replaces A's under its own key.
  struct BFact {
    const char* key;
    const nlohmann::json& from;
    const char* from_key;
  };
  for (const BFact& f :
       {BFact{"dispatch", build_b, "dispatch"}, BFact{"accuracy", both.runner, "accuracy_b"},
        BFact{"params", both.runner, "params_b"}, BFact{"traffic", both.runner, "traffic_b"},
        BFact{"summary", both.runner, "summary_b"}}) {
    b.runner.erase(f.key);
    if (const nlohmann::json v = f.from.value(f.from_key, nlohmann::json()); !v.is_null())
      b.runner[f.key] = v;
  }
  for (const char* key : {"params_b", "accuracy_b", "traffic_b", "summary_b", "build_b"}) {
    a.runner.erase(key);
    b.runner.erase(key);
  }
  return {std::move(a), std::move(b)};
}

ProcessOutcome outcome_from_runner_json(const std::string& out, int expected_repetitions) {
  ProcessOutcome o;
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(out);
    nlohmann::json run_delay = nlohmann::json::array(), steal = nlohmann::json::array();
    for (const auto& rep : j.at("repetitions")) {
      // What the scheduler and the hypervisor took from each repetition (null: not readable).
      run_delay.push_back(rep.contains("run_delay_ns") ? rep["run_delay_ns"] : nlohmann::json());
      steal.push_back(rep.contains("steal_ns") ? rep["steal_ns"] : nlohmann::json());
      k3store::SampleRecord s;
      s.ns = rep.at("ns").get<double>();
      s.cpu_ns = rep.at("cpu_ns").get<double>();
      s.iterations = rep.at("iterations").get<std::int64_t>();
      if (rep.contains("counters"))
        s.counters = rep["counters"].get<std::map<std::string, double>>();
      if (rep.contains("flags")) s.flags = rep["flags"].get<std::vector<std::string>>();
      if (rep.contains("side")) o.sides += rep["side"].get<std::string>().substr(0, 1);
      o.disturbed = o.disturbed || !s.flags.empty();
      o.kernel_ns += s.ns * double(s.iterations);
      o.samples.push_back(std::move(s));
    }
    o.runner["scheduling"] = {{"run_delay_ns", run_delay}, {"steal_ns", steal}};
    o.path = j.value("path", "");
    if (j.contains("timing")) {
      o.timing = j["timing"];
      o.warmup_s = o.timing.value("warmup_s", 0.0);
    }
    if (j.contains("calibration"))
      o.iterations = j["calibration"].value("iterations", std::int64_t{0});
    if (o.iterations == 0 && !o.samples.empty()) o.iterations = o.samples.front().iterations;
  } catch (const nlohmann::json::exception& e) {
    o.reason = fmt::format("runner output is not a k3bench result: {}", e.what());
    return o;
  }
  if (o.samples.size() != static_cast<std::size_t>(expected_repetitions)) {
    o.reason = fmt::format("runner reported {} repetitions, expected {}", o.samples.size(),
                           expected_repetitions);
    return o;
  }
  std::vector<double> t;
  for (const auto& s : o.samples) t.push_back(s.ns);
  for (std::size_t i : k3stats::tukey_outliers(t)) o.samples[i].outlier = true;
  for (const char* key :
       {"dispatch", "accuracy", "params", "traffic", "counters", "extra_work", "environment",
        "summary", "calibration", "params_b", "accuracy_b", "traffic_b", "summary_b", "build_b"}) {
    if (j.contains(key)) o.runner[key] = j[key];
  }
  o.ok = true;
  return o;
}

ProcessOutcome run_cell_process(const k3targets::Target& target, const CellSpec& cell,
                                const k3targets::ProcessOptions& options, bool check_accuracy,
                                std::int64_t iterations) {
  auto args = cell.settings.runner_args(cell, iterations);
  if (!check_accuracy) {
    // The inputs are a pure function of the seed, so one process per cell proves accuracy; the
    // others skip the float64 reference, which would otherwise dominate the harness overhead.
    for (std::size_t i = 0; i + 1 < args.size(); ++i)
      if (args[i] == "--check") args[i + 1] = "none";
  }
  const auto r = target.run(args, options);
  // A farm board that this run cost its place: nothing it printed is a measurement.
  if (const std::string why = target.lost(); !why.empty()) throw k3targets::TargetLost(why);
  ProcessOutcome o;
  if (r.ok()) o = outcome_from_runner_json(r.out, cell.settings.repetitions);
  o.wall_ns = r.wall_ns;
  if (!r.timed_out && r.signal == 0 && !r.spawn_failed) o.exit_code = r.exit_code;
  if (!r.ok()) {
    o.ok = false;
    o.reason = r.failure_reason(options.timeout_s);
    if (r.exit_code == 4 && !r.timed_out && r.signal == 0)
      o.reason = "accuracy failure: " + o.reason;
  }
  return o;
}

ProcessOutcome RunnerExecutor::run(const SweepBuild& build, const CellSpec& cell,
                                   int /*process_index*/, bool check_accuracy,
                                   std::int64_t iterations, double timeout_s) {
  return run_cell_process(*build.target, cell, k3targets::ProcessOptions::with_timeout(timeout_s),
                          check_accuracy, iterations);
}

}  // namespace k3bench
