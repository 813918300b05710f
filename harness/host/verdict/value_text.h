// Text forms of values that every report writer prints the same way.
#pragma once

#include <optional>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "harness/host/stats/stats.h"

namespace k3verdict {

// Why there is no interval: "2 processes: too few for an interval", "1 paired round: ...".
inline std::string too_few_for_an_interval(int n, const char* one, const char* many) {
  return fmt::format("{} {}: too few for an interval", n, n == 1 ? one : many);
}

// Nanoseconds as microseconds with three decimals; "-" when there is no value.
inline std::string us(std::optional<double> ns) {
  return ns ? fmt::format("{:.3f}", *ns / 1e3) : "-";
}

// What a run's per-call figures are: nanoseconds (every timed run, printed as microseconds) or
// instructions (`k3tune count` runs: settings.metric = "instructions per call", stored where the
// times go).
struct PerCall {
  bool instructions = false;
  static PerCall of(const nlohmann::json& run_settings) {
    return {run_settings.is_object() &&
            run_settings.value("metric", std::string()) == "instructions per call"};
  }
  const char* unit() const { return instructions ? "insns" : "us"; }
  std::string text(std::optional<double> value) const {
    if (!value) return "-";
    return instructions ? fmt::format("{:.0f}", *value) : us(value);
  }
  // Whether a cell of `processes` processes has an interval to show: a count always (its
  // jitter); a time from three processes (k3stats::log_interval). Databases written before that
  // rule hold two-process Student intervals, possibly below zero: every reader asks this first.
  bool shows_interval(int processes) const {
    return instructions || processes >= static_cast<int>(k3stats::kMinProcessesForInterval);
  }
  // A cell's 95% interval, or why it has none: saying so beats printing a dash.
  std::string interval(std::optional<double> low, std::optional<double> high, int processes,
                       const char* between = " .. ") const {
    if (!shows_interval(processes) && processes > 0)
      return too_few_for_an_interval(processes, "process", "processes");
    return low && high ? text(low) + between + text(high) : "-";
  }
  // Per second of a per-call quantity (bytes, operations: GB/s, GOPS), only for timed runs.
  std::string rate(std::optional<double> per_call, std::optional<double> value) const {
    if (instructions || !per_call || !value) return "-";
    return fmt::format("{:.2f}", *per_call / *value);
  }
};

// A parameter or shape value as a cell label shows it: strings bare, anything else as JSON.
inline std::string value_text(const nlohmann::json& v) {
  return v.is_string() ? v.get<std::string>() : v.dump();
}

}  // namespace k3verdict
