// The bench configs (`k3tune bench --config`) that the report and nightly tests measure: a
// [measure] table with the test's process plan, then its cases, most of them linear_decode at one
// worker and one copy (the cheapest timed op with a known truth).
#pragma once

#include <string>

namespace k3test {

// [measure]: `processes` processes of `repetitions` repetitions, each at least `min_time_s`
// seconds (as written in TOML), after one warm-up call.
inline std::string measure_table(int processes, int repetitions, const std::string& min_time_s) {
  return "\n[measure]\nprocesses = " + std::to_string(processes) +
         "\nrepetitions = " + std::to_string(repetitions) + "\nmin_time_s = " + min_time_s +
         "\nwarmup = 1\n";
}

// A [[case]] of linear_decode at one worker and one copy over `shapes` (a TOML array of inline
// tables: "[{ n = 256, k = 512 }]").
inline std::string decode_case(const std::string& shapes) {
  return "[[case]]\nop = \"linear_decode\"\nshapes = " + shapes +
         "\nparams = { workers = 1, copies = 1 }\n";
}

}  // namespace k3test
