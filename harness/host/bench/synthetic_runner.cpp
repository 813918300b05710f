#include "harness/host/bench/synthetic_runner.h"

#include <cmath>
#include <filesystem>

namespace k3bench {

ProcessOutcome SyntheticExecutor::run(const SweepBuild&, const CellSpec& cell, int, bool,
                                      std::int64_t iterations, double) {
  ++processes_;
  std::normal_distribution<double> between(0.0, model_.between), within(0.0, model_.within);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  // AR(1) with stationary sd `drift`: x' = rho x + sqrt(1 - rho^2) * drift * e.
  const double rho = model_.drift_correlation;
  drift_state_ = rho * drift_state_ +
                 std::sqrt(1 - rho * rho) * model_.drift * std::normal_distribution<double>()(rng_);
  const double deviation =
      model_.between_df > 0
          ? model_.between * std::student_t_distribution<double>(model_.between_df)(rng_)
          : between(rng_);
  const double burst =
      model_.contamination > 0 && unit(rng_) < model_.contamination
          ? std::fabs(std::normal_distribution<double>(0.0, model_.contamination_scale)(rng_))
          : 0.0;
  const double factor = std::exp(deviation + burst + drift_state_);
  const double level = (model_.base_ns + cell.settings.extra_work_ns) * factor;
  const bool disturbed = unit(rng_) < model_.disturbed_probability;
  const bool planted_b =
      std::filesystem::path(cell.settings.build_b).filename().string().find("planted") !=
      std::string::npos;
  const double planted = planted_b ? model_.planted_build : 0.0;
  ProcessOutcome o;
  o.ok = true;
  o.exit_code = 0;
  o.iterations = iterations > 0 ? iterations : 10;
  for (int r = 0; r < cell.settings.repetitions; ++r) {
    k3store::SampleRecord s;
    double per_call = level;
    // Two sides in one process, A B, B A, ...: as k3bench --extra-work-sides abba (the extra
    // work on B) or --build-b (B the second build).
    if (cell.settings.alternate_extra_work || !cell.settings.build_b.empty()) {
      const bool b = (r % 2 == 1) != ((r / 2) % 2 == 1);
      o.sides += b ? 'B' : 'A';
      per_call = cell.settings.alternate_extra_work
                     ? (model_.base_ns + (b ? cell.settings.extra_work_ns : 0)) * factor
                     : level * (b ? 1 + planted : 1.0);
    }
    s.ns = per_call * std::exp(within(rng_));
    s.cpu_ns = s.ns;
    s.iterations = o.iterations;
    if (disturbed && r == 0) s.flags.push_back("frequency-change");
    o.kernel_ns += s.ns * double(s.iterations);
    o.samples.push_back(s);
  }
  o.disturbed = disturbed;
  o.path = "synthetic";
  if (!cell.settings.build_b.empty())
    o.runner["build_b"] = {{"plugin", cell.settings.build_b},
                           {"build", {{"build", {{"planted_slowdown_percent", 100 * planted}}}}}};
  o.wall_ns = static_cast<std::int64_t>(o.kernel_ns);
  return o;
}

}  // namespace k3bench
