// The result document of one case, and its two renderings (JSON and a readable table row).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/runner/measure.h"
#include "harness/runner/op_case.h"

namespace k3runner {

struct Result {
  std::string op;
  nlohmann::json shape, params;
  std::string path;
  nlohmann::json dispatch;  // requested path, path taken, reason, emulated
  bool emulated = false;    // path ran as software models: the table marks it, timings are not real
  std::uint64_t seed = 0;
  Traffic traffic;
  std::optional<Accuracy> accuracy;
  std::vector<Repetition> repetitions;
  Calibration calibration;
  nlohmann::json timing;  // seconds: setup, check, warmup, measured, total (null when not measured)
  nlohmann::json environment;
  nlohmann::json counters;    // perf counter status: available names, unavailable with reasons
  nlohmann::json extra_work;  // null unless --extra-work-ns was given
  nlohmann::json tuning;      // null unless a table was asked for: the table, and each parameter's source
  nlohmann::json ime2_instructions;  // emulation builds: executed IME2 instructions (ime2_counts.h)
  nlohmann::json count_marks;  // --count-marks: the calls marked for the counter (call_marks.h)
  // --params-b: the second case's parameters, work and accuracy (null / unset without one); the
  // repetitions then alternate the two cases (Repetition::side) and summary is side A's.
  nlohmann::json params_b;
  Traffic traffic_b;
  std::optional<Accuracy> accuracy_b;
  // --build-b: the second build's plugin file, interface version, build provenance and dispatch
  // (null without one); side B's figures are then that build's.
  nlohmann::json build_b;
};

nlohmann::json result_json(const Result& r);
std::string result_table(const Result& r, bool header);

}  // namespace k3runner
