// How one cell is measured: repetitions, warm-up, time per repetition, the accuracy check, the
// kernel layer asked for, and the runner's measurement environment (thread placement, how idle
// workers wait, huge pages, how cached weights are loaded). Part of a cell's identity: the same op
// measured two ways is two cells. Any of these keys may also vary across the cells of one sweep
// (`--grid path=rvv,ime2`, `--grid huge_pages=on,off`), which is how such factors are compared
// interleaved, in one run.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/common/params/param_spec.h"
#include "harness/host/bench/defaults.h"

namespace k3bench {

struct CellSpec;

struct MeasureSettings {
  int repetitions = defaults::kRepetitions;
  int warmup = 2;  // untimed calls before measuring (they also calibrate)
  double min_time_s =
      defaults::kMinTimeS;       // per repetition (the call count is calibrated once per cell)
  std::int64_t iterations = 0;   // fixed calls per repetition instead of min_time (0: automatic)
  std::string check = "sample";  // the runner's accuracy check before timing
  std::string path = "auto";     // kernel layer requested from the runner
  double extra_work_ns = 0;      // calibrated extra work per call (selfcheck only)
  // The repetitions alternate A (no extra work) and B (with it) in pairs A B, B A, ... inside each
  // process (k3bench --extra-work-sides abba; selfcheck only): the within-process comparison.
  bool alternate_extra_work = false;
  // A second parameter set (canonical typed object, null: none): every process alternates the
  // cell's parameters (side A) and these (side B) repetition by repetition, A B, B A, ...
  // (k3bench --params-b): the within-process comparison of two configurations of one runner
  // (table verify). `repetitions` counts both sides.
  nlohmann::json params_b;
  // A second build's kernel plugin ("" : none): every process alternates this runner's build (A)
  // and the plugin's (B) repetition by repetition (k3bench --build-b): two builds compared inside
  // one process (the selfcheck's build pair). A path where the runner runs.
  std::string build_b;
  std::string cpus = "auto";         // k3bench --cpus: auto | none | a CPU list
  std::string pool_wait = "spin";    // k3bench --pool-wait
  std::string huge_pages = "on";     // k3bench --huge-pages
  std::string weight_load = "mmap";  // k3bench --weight-load
  // k3bench --table: a tuning table the runner loads ("" : none). A path on this machine, so a
  // local or qemu target only; its SHA-256 is part of the identity, so an edited table is another
  // cell. Both are left out of the identity when empty, so cells without a table keep their keys.
  std::string table, table_sha256;

  // The identity (every field but an empty table; a cell key hashes it).
  nlohmann::json to_json() const;
  // The runner arguments that measure `cell` with these settings; `iterations` > 0 overrides the
  // automatic call count (k3tune passes the first process's calibration to the others).
  std::vector<std::string> runner_args(const CellSpec& cell, std::int64_t iterations = 0) const;

  // The keys that may vary per cell, with their types, ranges and defaults.
  static const std::vector<k3params::ParamSpec>& keys();
  static bool is_key(const std::string& name);
  // Sets one key from text (UserError naming `where` when the value is not valid for it).
  void set(const std::string& key, const std::string& value, const std::string& where);
};

}  // namespace k3bench
