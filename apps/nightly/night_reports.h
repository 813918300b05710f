// What a night leaves for people to read: nightly.md (night_summary.h), and, when no step failed,
// the night added to the verdict's report -- appended to summary.md, leading report.html, and as
// the "nightly" object of report.json (its steps, each verdict step's outcome, the tables).
#pragma once

#include <vector>

#include "apps/nightly/night_summary.h"

namespace k3nightly {

// Each addition is made once: a resumed night does not add itself to the report again.
void write_night_reports(const NightlyOutcome& o, const NightlyRequest& rq,
                         const std::vector<StepLine>& lines, const NightlyState& state,
                         bool failed);

}  // namespace k3nightly
