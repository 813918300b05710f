// `k3tune table verify`: re-measures a table's choices against the kernel defaults on a target,
// interleaved, and reports the realised speed-up per entry with its
// 95% interval and an overall verdict. Each entry is judged by the one within-run A/B rule
// (k3verdict::paired_timing_verdict, the rule of bench --baseline-runner and report): faster or
// slower only when significant and at least the op's minimum effect of the regression rules,
// raised to the target's noise floor. Measurements land in the database as a run.
//
// Two designs. "within" (the default): both sides in every process, the repetitions alternating
// A B, B A, ... (k3bench --params-b), one paired ratio per process -- the spread between
// processes, which dominates on a shared machine, cancels in each ratio (measured: MDE 4.4%
// against 8.6% at less than half the wall time per verdict, docs/measurement.md). "rounds": one
// process per side and round (A B, B A, ... across rounds), the design two builds need.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/host/bench/measure_settings.h"
#include "harness/host/targets/target.h"
#include "tuner/target_facts.h"
#include "tuner/tuning.h"

namespace k3tuner {

struct VerifyCommand {
  std::string root, db_path, table, command_line;
  std::string rules_file;  // regression rules; empty: <root>/configs/regression.toml
  // Per side and entry ("within": processes, each holding both sides; the first look of --mde).
  int processes = 8;
  std::string design = "within";  // "within" | "rounds" (above)
  // The within design's budget, set by the effect to be seen: after the first --processes, one
  // more process at a time until the signed-rank test's minimum detectable effect (from the
  // magnitudes of the per-process log ratios only, which keeps its null distribution exact) is at
  // most `mde` -- < 0: the entry's verdict threshold (its op's minimum effect of the rules, raised
  // to the noise floor); 0: exactly --processes -- or max_processes are counted.
  double mde = -1;
  int max_processes = 16;  // bench's ceiling (defaults::kMaxProcesses)
  k3bench::MeasureSettings settings;
  bool force = false;  // a table whose fingerprint is not the target's, or an emulated target
};

// An entry against the defaults: the table's parameters faster, slower, no different (within the
// MDE), or not judged (failed: the reason is the entry's `failure`).
enum class EntryVerdict { kFaster, kSlower, kNoDifference, kFailed };
const char* to_string(EntryVerdict verdict);  // "faster", "slower", "no difference", "failed"

struct VerifiedEntry {
  std::string id, op;
  EntryVerdict verdict = EntryVerdict::kFailed;
  std::string failure;  // why it could not be judged (kFailed)
  // "faster", "slower", "no difference", "failed: <reason>": what outputs print.
  std::string verdict_text() const;
  double threshold = 0;     // the minimum effect the verdict applied (op's, or the noise floor)
  double mde = 0;           // "no difference" means within +-mde
  double mde_target = 0;    // the MDE the processes were added for (0: a fixed count)
  std::string stop_reason;  // which rule ended the entry's processes
  nlohmann::json shape, params;
  Evidence evidence;   // mean = with the table's parameters; default_mean; speedup with its CI
  double claimed = 0;  // the speed-up the table's evidence claims
};

struct VerifyOutcome {
  TargetFacts facts;
  std::string run_uuid;
  std::vector<VerifiedEntry> entries;
  int faster = 0, slower = 0, same = 0, failed = 0;
  double geomean_speedup = 1;
  std::string verdict;  // one line
  std::string rules;    // the regression rules the entries were judged by
};

VerifyOutcome run_verify(const k3targets::Target& target, const VerifyCommand& command);

}  // namespace k3tuner
