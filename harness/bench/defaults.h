// The measurement protocol's defaults, in one place, with the measurements behind them (README,
// "Measurement"). Between-process spread dominates within-process spread on every machine this was
// measured on, so the budget goes into processes, not into long repetitions.
#pragma once

namespace k3tune::defaults {

inline constexpr int kMinProcesses = 3;       // the seed's 3 x 5 stays the floor
inline constexpr int kMaxProcesses = 12;      // adaptive ceiling per cell
inline constexpr double kTargetCi = 0.02;     // relative 95% CI half-width the adaptive rounds aim for
inline constexpr int kRepetitions = 5;
inline constexpr double kMinTimeS = 0.05;     // per repetition; the call count is calibrated once per cell
inline constexpr double kMinEffect = 0.02;    // smallest relative difference ever called a change
inline constexpr double kAlpha = 0.05;
inline constexpr double kPower = 0.8;         // for the minimum detectable effect

}  // namespace k3tune::defaults
