#include "harness/host/stats/round_pairs.h"

#include <stdexcept>
#include <unordered_map>
#include <unordered_set>

namespace k3stats {

RoundPairs pair_by_round(const std::vector<int>& rounds_a, const std::vector<double>& values_a,
                         const std::vector<int>& rounds_b, const std::vector<double>& values_b) {
  if (rounds_a.size() != values_a.size() || rounds_b.size() != values_b.size())
    throw std::invalid_argument("pair_by_round: a round list and its values differ in length");
  std::unordered_map<int, double> b_of_round;
  for (std::size_t j = 0; j < rounds_b.size(); ++j) b_of_round.emplace(rounds_b[j], values_b[j]);
  RoundPairs out;
  std::unordered_set<int> used;  // a round pairs once, with its first value on each side
  for (std::size_t i = 0; i < rounds_a.size(); ++i) {
    const auto it = b_of_round.find(rounds_a[i]);
    if (it == b_of_round.end() || !used.insert(rounds_a[i]).second) continue;
    out.a.push_back(values_a[i]);
    out.b.push_back(it->second);
  }
  return out;
}

}  // namespace k3stats
