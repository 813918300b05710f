#include "harness/runner/report.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "harness/runner/case_json.h"

namespace k3runner {
namespace {

struct Summary {
  double median = 0, min = 0, max = 0, mean = 0, cv = 0;
};

// side != 0: only the repetitions of that side (a process alternating two parameter sets).
Summary summarize(const std::vector<Repetition>& reps, char side = 0) {
  Summary s;
  std::vector<double> t;
  for (const auto& r : reps)
    if (side == 0 || r.side == side) t.push_back(r.real_ns);
  if (t.empty()) return s;
  std::sort(t.begin(), t.end());
  const std::size_t n = t.size();
  s.median = n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]);
  s.min = t.front();
  s.max = t.back();
  for (double x : t) s.mean += x / double(n);
  double var = 0;
  for (double x : t) var += (x - s.mean) * (x - s.mean);
  s.cv = n > 1 ? std::sqrt(var / (n - 1)) / s.mean : 0.0;
  return s;
}

nlohmann::json summary_json(const Summary& s, const Traffic& traffic) {
  const double bytes = double(traffic.weight_bytes + traffic.activation_bytes);
  return {{"median_ns", s.median},
          {"min_ns", s.min},
          {"max_ns", s.max},
          {"mean_ns", s.mean},
          {"cv", s.cv},
          {"weight_gbps", traffic.weight_bytes / s.median},
          {"total_gbps", bytes / s.median},
          {"gops", traffic.ops / s.median}};
}

}  // namespace

nlohmann::json result_json(const Result& r) {
  nlohmann::json j;
  j["schema"] = "k3bench.result/1";
  j["op"] = r.op;
  j["shape"] = r.shape;
  j["params"] = r.params;
  j["path"] = r.path;
  j["dispatch"] = r.dispatch;
  if (!r.tuning.is_null()) j["tuning"] = r.tuning;
  if (!r.ime2_instructions.is_null()) j["ime2_instructions"] = r.ime2_instructions;
  if (!r.count_marks.is_null()) j["count_marks"] = r.count_marks;
  j["seed"] = r.seed;
  j["traffic"] = traffic_json(r.traffic);
  j["repetitions"] = nlohmann::json::array();
  for (const auto& rep : r.repetitions) {
    nlohmann::json jr = {{"ns", rep.real_ns},
                         {"cpu_ns", rep.cpu_ns},
                         {"iterations", rep.iterations},
                         {"cpu", {rep.cpu_before, rep.cpu_after}},
                         {"flags", rep.flags}};
    if (rep.cpu_share >= 0) jr["cpu_share"] = rep.cpu_share;
    if (rep.side != 0) jr["side"] = std::string(1, rep.side);
    if (rep.taken.run_delay_ns >= 0) jr["run_delay_ns"] = rep.taken.run_delay_ns;
    if (rep.taken.steal_ns >= 0) jr["steal_ns"] = rep.taken.steal_ns;
    if (!rep.counters.empty()) jr["counters"] = rep.counters;
    if (!rep.flags.empty())
      jr["readings"] = {{"before", rep.readings_before}, {"after", rep.readings_after}};
    j["repetitions"].push_back(std::move(jr));
  }
  // With a second parameter set the summary is side A's (the --params case) and summary_b side B's.
  const bool two_cases = !r.params_b.is_null();
  if (!r.repetitions.empty()) {
    j["summary"] = summary_json(summarize(r.repetitions, two_cases ? 'A' : 0), r.traffic);
    if (two_cases) j["summary_b"] = summary_json(summarize(r.repetitions, 'B'), r.traffic_b);
  }
  j["accuracy"] = accuracy_json(r.accuracy);
  if (two_cases) {
    j["params_b"] = r.params_b;
    j["traffic_b"] = traffic_json(r.traffic_b);
    j["accuracy_b"] = accuracy_json(r.accuracy_b);
    if (!r.build_b.is_null()) j["build_b"] = r.build_b;
  }
  if (!r.timing.is_null()) {
    j["calibration"] = {{"iterations", r.calibration.iterations},
                        {"source", r.calibration.source},
                        {"warmup_calls", r.calibration.warmup_calls},
                        {"call_ns_estimate", r.calibration.call_ns_estimate}};
    j["timing"] = r.timing;
  }
  j["environment"] = r.environment;
  j["counters"] =
      r.counters.is_null()
          ? nlohmann::json{{"available", nlohmann::json::array()},
                           {"unavailable", {{"all", "not measured (accuracy failure)"}}}}
          : r.counters;
  j["extra_work"] = r.extra_work;
  return j;
}

std::string result_table(const Result& r, bool header) {
  std::string out;
  if (header) {
    out +=
        fmt::format("{:<18} {:<34} {:<10} {:>3} {:>12} {:>17} {:>8} {:>8} {:>9}\n", "op", "shape",
                    "path", "w", "median us", "min..max us", "GB/s", "GOPS", "err/bound");
  }
  std::string shape;
  for (const auto& [k, v] : r.shape.items())
    shape += (shape.empty() ? "" : ",") + k + "=" + v.dump();
  std::erase(shape, '"');
  const Summary s = summarize(r.repetitions, r.params_b.is_null() ? 0 : 'A');
  const int workers = r.params.contains("workers") ? r.params["workers"].get<int>() : 1;
  const double bytes = double(r.traffic.weight_bytes + r.traffic.activation_bytes);
  const std::string acc =
      r.accuracy ? fmt::format("{:.2g}{}", r.accuracy->worst_ratio, r.accuracy->pass ? "" : "!")
                 : "-";
  out += fmt::format(
      "{:<18} {:<34} {:<10} {:>3} {:>12.1f} {:>8.1f}..{:<8.1f} {:>8.2f} {:>8.2f} {:>9}\n", r.op,
      shape, r.emulated ? r.path + "(emu)" : r.path, workers, s.median / 1e3, s.min / 1e3,
      s.max / 1e3, s.median > 0 ? bytes / s.median : 0.0,
      s.median > 0 ? r.traffic.ops / s.median : 0.0, acc);
  return out;
}

}  // namespace k3runner
