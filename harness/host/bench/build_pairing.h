// How an A/B between two builds is measured. Where it can, the runner under test loads the
// baseline build's kernel plugin (k3bench --build-b: both builds in one process, repetitions A B,
// B A, ...), so each process is a pair and the process-to-process spread cancels; elsewhere the
// two builds' runners alternate as separate processes in interleaved rounds. Which of the two, and
// why, is decided once per A/B before anything is measured, and said with the verdict.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/host/bench/grid.h"
#include "harness/host/store/build_pairing_record.h"
#include "harness/host/targets/runner_facts.h"
#include "harness/host/targets/target.h"

namespace k3bench {

// The plugin file a build tree holds beside its k3bench, and the suffix of a kept runner's copy
// (<runners dir>/<sha256>.plugin.so, reports/runner_store.h).
inline constexpr const char* kPluginFile = "libk3bench_plugin.so";
inline constexpr const char* kKeptPluginSuffix = ".plugin.so";

enum class BuildPairingMode {
  kAuto,    // within one process where both builds allow it, else rounds
  kRounds,  // always separate processes (bench --build-pairing rounds)
};
BuildPairingMode parse_build_pairing_mode(const std::string& text);  // UserError on other words

// The decision, stored with the run's settings and worded once (store/build_pairing_record.h).
using BuildPairing = k3store::BuildPairing;

// The kernel plugin of the build whose runner is at `runner_path`: a kept runner's copy
// (<runner><kKeptPluginSuffix>) or the build tree's kPluginFile beside it; "" when neither exists.
std::string plugin_beside(const std::string& runner_path);

// Decides the design for `baseline` (A) against `candidate` (B) measuring `cells`: within one
// process when the mode allows it, no cell already alternates two sides or loads a table, a plugin
// lies beside the baseline's runner, the candidate's target can be handed it (local and qemu in
// place, a farm board installs it: Target::place_file), the candidate's runner loads it (k3bench
// --facts --build-b: its refusal is the reason otherwise) and the plugin is the baseline runner's
// own build (same runner version, source revision, compiler, flags; no planted slowdown). The
// pairing's plugin is its path where the runner runs.
// `baseline_facts`: the baseline runner's k3bench --facts, read by the caller.
BuildPairing decide_build_pairing(const k3targets::Target& candidate,
                                  const k3targets::Target& baseline,
                                  const k3targets::RunnerFacts& baseline_facts,
                                  const std::vector<CellSpec>& cells, BuildPairingMode mode);

}  // namespace k3bench
