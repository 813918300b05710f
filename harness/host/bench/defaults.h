// The measurement protocol's defaults, in one place, with the measurements behind them
// (docs/measurement.md). On the machines measured, process-to-process spread is mostly the
// machine's own slow drift, so the budget goes into processes and into interleaved, paired
// comparisons, not into long repetitions.
#pragma once

namespace k3bench::defaults {

// Adaptive (two-stage) by default: a first stage of 5 processes per cell, then as many as the
// spread asks for to reach a +-3% interval, at most 16. `-P 3 -R 5` alone is the seed's fixed 3
// x 5.
inline constexpr int kMinProcesses = 5;
inline constexpr int kMaxProcesses = 16;
inline constexpr double kTargetCi = 0.03;  // relative 95% CI half-width the adaptive rounds aim for
inline constexpr int kRepetitions = 5;
// 0.05 s per repetition (the call count is calibrated once per cell). The noise study
// (docs/measurement.md, "More evidence per wall-second") found the spread almost all per process
// (85-98% of the variance of the process means), so a process's repetitions buy little: a quarter
// of the repetition length kept the per-process spread and cut a process from about 1.0 to 0.3 s,
// 1.4-5.8x the evidence per wall-second on every cell measured (0.2 s before).
inline constexpr double kMinTimeS = 0.05;
inline constexpr double kAlpha = 0.05;
inline constexpr double kPower = 0.8;  // for the minimum detectable effect
// bench --mde: rounds are added until the minimum detectable effect reaches the target, within a
// wall-time budget; the ceiling only guards against a target the machine can never reach.
inline constexpr double kMdeBudgetS = 900;
inline constexpr int kMdeMaxProcesses = 400;

}  // namespace k3bench::defaults
