#include "apps/bisect/bisect_search.h"

#include <algorithm>
#include <stdexcept>

namespace k3bisect {

const char* to_string(ProbeOutcome o) {
  switch (o) {
    case ProbeOutcome::kGood:
      return "good";
    case ProbeOutcome::kBad:
      return "bad";
    case ProbeOutcome::kSkip:
      return "skip";
  }
  return "?";
}

BisectSearch::BisectSearch(std::vector<std::string> commits)
    : commits_(std::move(commits)), first_bad_(static_cast<long>(commits_.size()) - 1) {
  if (commits_.empty()) throw std::invalid_argument("BisectSearch: no commits");
}

std::optional<std::size_t> BisectSearch::next() const {
  // The open range is (last_good_, first_bad_); its middle rounds down, as git bisect's does, and
  // a skipped middle gives way to the nearest unskipped commit (below first on a tie).
  const long mid = last_good_ + (first_bad_ - last_good_) / 2;
  for (long d = 0; d < first_bad_ - last_good_; ++d) {
    for (const long i : {mid - d, mid + d}) {
      if (i > last_good_ && i < first_bad_ && !skipped_.contains(static_cast<std::size_t>(i)))
        return static_cast<std::size_t>(i);
    }
  }
  return std::nullopt;
}

void BisectSearch::record(std::size_t index, ProbeOutcome outcome) {
  const long i = static_cast<long>(index);
  if (outcome == ProbeOutcome::kSkip)
    skipped_.insert(index);
  else if (outcome == ProbeOutcome::kGood)
    last_good_ = std::max(last_good_, i);
  else
    first_bad_ = std::min(first_bad_, i);
}

std::vector<std::string> BisectSearch::candidates() const {
  return {commits_.begin() + (last_good_ + 1), commits_.begin() + (first_bad_ + 1)};
}

}  // namespace k3bisect
