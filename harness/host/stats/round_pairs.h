// Pairing by round: two builds (or two configurations) measured in the same interleaved rounds,
// A B A B, are compared round by round, so the machine's drift between rounds cancels. This is
// the one place that lines the two sides up; every paired verdict (bench, report, confirm, table
// verify, the round planner) takes its pairs from here.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

namespace k3stats {

struct RoundPairs {
  std::vector<double> a, b;  // a[i] and b[i] come from the same round
};

// The values of both sides in the rounds both have, in side a's order. A round a side lacks (a
// failed or disturbed process) drops that round from the pairs; a round listed twice on one side
// pairs its first value only.
RoundPairs pair_by_round(const std::vector<int>& rounds_a, const std::vector<double>& values_a,
                         const std::vector<int>& rounds_b, const std::vector<double>& values_b);

}  // namespace k3stats
