// The search of `k3tune bisect`, apart from building and measuring: binary search for the first bad
// commit over the commits after the good revision up to the bad one (oldest first; the last is
// known bad), with `git bisect skip` semantics. A skipped commit (it does not build, or its runner
// fails) is never probed again and the search probes the unskipped commit nearest the middle of
// the range still open instead; when only skipped commits lie between the last good and the first
// bad commit, the result is that range (the first bad commit is one of them). Without skips it
// takes ceil(log2(N)) probes for N commits.
#pragma once

#include <cstddef>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace k3bisect {

enum class ProbeOutcome { kGood, kBad, kSkip };
const char* to_string(ProbeOutcome o);

class BisectSearch {
 public:
  // `commits`: after good, oldest first, the last one the bad revision (at least one).
  explicit BisectSearch(std::vector<std::string> commits);

  // The index of the next commit to probe; nullopt when the search is over.
  std::optional<std::size_t> next() const;
  void record(std::size_t index, ProbeOutcome outcome);

  // The commits the first bad one is among, oldest first: one commit once it is found; more when
  // skips hide it (every commit between the last good and the first bad probe, the bad included).
  std::vector<std::string> candidates() const;
  bool found() const { return candidates().size() == 1; }
  const std::vector<std::string>& commits() const { return commits_; }

 private:
  std::vector<std::string> commits_;
  long last_good_ = -1;  // index; -1: the good revision itself
  long first_bad_;       // index
  std::set<std::size_t> skipped_;
};

}  // namespace k3bisect
