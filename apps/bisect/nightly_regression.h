// `k3tune bisect --from-nightly DIR`: what a nightly's verdict found, as a bisection's input. The
// nightly (its directory's name is its id in the nightlies table) holds the verdict run: the
// previous nightly's kept host runner (A) measured interleaved with tonight's (B). The good
// revision is A's build provenance (builds.source_revision), the bad one B's, and the cases are
// the cells the verdict calls a timing regression (op, shape and parameters as measured). While
// the nightly runs (its own bisect step), the verdict run is read from its verdict-bench step.
#pragma once

#include <string>
#include <vector>

#include "apps/bisect/bisection.h"

namespace k3bisect {

struct NightlyRegression {
  std::string nightly_id, good_revision, bad_revision;
  std::vector<BisectCase> cases;
};

// UserError (one line) for a folder that is no nightly of this database, a nightly without a
// verdict run, builds without a recorded revision, or a verdict with no timing regression.
NightlyRegression nightly_regression(const std::string& dir, const std::string& db_path,
                                     const std::string& rules_file);

}  // namespace k3bisect
