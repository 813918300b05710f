// What `k3tune selfcheck stats` reports (cmd_selfcheck.cpp runs it): the JSON contract scripts
// read, and the printed blocks, one per design (rounds, within one process, build pair), each
// with its budget, its cells and its rates with their 95% intervals and prices.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "harness/host/bench/selfcheck.h"

namespace k3cli {

// The selfcheck's settings a report states (the rest of its options shaped the run itself).
struct SelfcheckReport {
  bool synthetic = false;
  bool only_build_pair = false;
  int within_processes = 0;
  std::string build_pair;  // "": no build pair
  double target_mde = 0;   // the effect whose price is printed
  double min_time_s = 0;
  int repetitions = 0;
  k3stats::CompareOptions compare;
};

nlohmann::json selfcheck_json(const k3bench::SelfcheckResult& r,
                              const k3bench::RoundsOptions& rounds, const SelfcheckReport& report,
                              const std::string& target);
void print_selfcheck(const k3bench::SelfcheckResult& r, const k3bench::RoundsOptions& rounds,
                     const SelfcheckReport& report, const std::string& target);

}  // namespace k3cli
