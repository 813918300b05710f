// Nightly trends: for every configuration the reported run measured (its own build), that
// configuration's mean time per call with its 95% CI in each run of the same target inside a
// window (--since/--until dates, else the last N runs up to the reported one), in time order,
// with change points marked: the mean rule's (change_points.h) and the distribution's
// (distribution_trend.h).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "harness/host/stats/distribution_changes.h"
#include "harness/host/store/sqlite.h"
#include "harness/host/verdict/regression_config.h"
#include "harness/host/verdict/run_data.h"
#include "reports/change_points.h"

namespace k3reports {

struct TrendWindow {
  std::string since, until;  // YYYY-MM-DD or YYYY-MM-DDTHH:MM:SSZ (UTC); empty: open
  int last = 30;             // without --since: at most this many runs, ending at the run
};

struct TrendPoint {
  std::string run_uuid, started_at, build_hash;
  double mean_ns = 0;
  std::optional<double> ci_low_ns, ci_high_ns;
  int processes = 0;
  std::vector<double> process_ns;  // the counted processes' mean times (the distribution's nights)
};

struct TrendSeries {
  std::string config_key, label, op, model, shape;
  std::vector<TrendPoint> points;  // oldest first
  std::vector<ChangePoint> change_points;
  // Changes of the distribution of process times (distribution_trend.h): level, spread or shape.
  std::vector<k3stats::DistributionChangePoint> distribution_changes;
};

struct Trends {
  std::string window;             // what was selected, in words
  std::vector<std::string> runs;  // run ids in the window, oldest first
  std::vector<TrendSeries> series;
};

// The window's upper bound as a timestamp: --until (a bare date: the end of that day), else the
// run's start. ReportError when the date is malformed.
std::string window_until(const TrendWindow& window, const k3verdict::RunData& run);

// ReportError when a date is malformed.
Trends load_trends(k3store::Connection& db, const k3verdict::RunData& run,
                   const TrendWindow& window, const k3verdict::RegressionConfig& config);

}  // namespace k3reports
