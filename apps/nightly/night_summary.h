// The night in words (nightly.md, appended to summary.md, and rendered at the head of report.html):
// the verdict first, then what judged it -- each board's verdict, tonight's instruction counts
// (always their figures; the exact verdict when an earlier nightly counted), the tables against the
// previous nightly's -- and last the steps and where everything is.
#pragma once

#include <string>
#include <vector>

#include "apps/nightly/nightly.h"
#include "apps/nightly/nightly_profile.h"

namespace k3nightly {

struct StepLine {
  std::string name, status, note;
  int exit_code = 0;
  double wall_s = 0;
};

// GitHub-flavoured Markdown (tables, fenced diffs), one top heading "# Nightly <id> ...".
std::string night_summary(const NightlyOutcome& o, const NightlyRequest& rq,
                          const std::vector<StepLine>& lines, const NightlyState& s);

}  // namespace k3nightly
