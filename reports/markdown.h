// summary.md: the verdict first (regressions, improvements, unchanged with the minimum detectable
// effect, accuracy flags, failed cells with their reasons), then per model and op the key figures
// with their 95% intervals, then trends, roofline, tuning and provenance in a few lines each.
// ASCII, at most 100 columns, readable raw in a terminal or a CI log.
#pragma once

#include <string>

#include "reports/report.h"

namespace k3reports {

std::string summary_markdown(const Report& report);

// The verdict section alone ("## Verdict ..." to the end of the failed cells): what `k3tune
// compare` prints.
std::string verdict_markdown(const k3verdict::Verdict& verdict);

// "1 REGRESSION, 2 improvements, 5 unchanged, 1 failed" (or "clean: ...").
std::string verdict_headline(const k3verdict::Verdict& verdict);

}  // namespace k3reports
