// The search of `k3tune bisect` on its own (apps/bisect/bisect_search.h), against a brute
// force: for every history length up to 40, every first bad commit and every set of skipped
// commits drawn at random, the search names the first bad commit, or the smallest range the skips
// hide it in, in at most ceil(log2 N) decided probes; and the nightly's bisect step exists in the
// full profile only, and runs only after a confirmed regression.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <set>
#include <string>

#include "apps/bisect/bisect_search.h"
#include "apps/nightly/nightly_profile.h"

namespace {

using k3bisect::BisectSearch;
using k3bisect::ProbeOutcome;

struct Outcome {
  std::vector<std::string> candidates;
  int decided = 0, probes = 0;
};

// History 0..n-1 (n-1 is bad); commits >= first_bad are bad; `skipped` cannot be measured.
Outcome bisect(int n, int first_bad, const std::set<int>& skipped) {
  std::vector<std::string> commits;
  for (int i = 0; i < n; ++i) commits.push_back(std::to_string(i));
  BisectSearch s(commits);
  Outcome o;
  while (const auto next = s.next()) {
    const int i = static_cast<int>(*next);
    ++o.probes;
    if (skipped.contains(i)) {
      s.record(*next, ProbeOutcome::kSkip);
      continue;
    }
    ++o.decided;
    s.record(*next, i >= first_bad ? ProbeOutcome::kBad : ProbeOutcome::kGood);
  }
  o.candidates = s.candidates();
  return o;
}

TEST(BisectSearch, FindsTheFirstBadCommitInCeilLog2Probes) {
  for (int n = 1; n <= 40; ++n) {
    for (int first_bad = 0; first_bad < n; ++first_bad) {
      const Outcome o = bisect(n, first_bad, {});
      ASSERT_EQ(o.candidates, std::vector<std::string>{std::to_string(first_bad)})
          << n << " " << first_bad;
      EXPECT_LE(o.probes, static_cast<int>(std::ceil(std::log2(n)))) << n << " " << first_bad;
    }
  }
}

TEST(BisectSearch, SkipsNarrowTheResultToTheRangeTheyHide) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 3000; ++trial) {
    const int n = 2 + static_cast<int>(rng() % 39);
    const int first_bad = static_cast<int>(rng() % n);
    std::set<int> skipped;
    for (int i = 0; i < n - 1; ++i)  // the bad revision itself was measured
      if (rng() % 4 == 0) skipped.insert(i);
    const Outcome o = bisect(n, first_bad, skipped);
    // The independent answer: the first bad commit and the skipped commits right before it (no
    // measurement can tell which of them is first), up to the first measurable bad commit.
    int lo = first_bad;
    while (lo > 0 && skipped.contains(lo - 1)) --lo;
    int hi = first_bad;
    while (skipped.contains(hi)) ++hi;
    std::vector<std::string> expected;
    for (int i = lo; i <= hi; ++i) expected.push_back(std::to_string(i));
    ASSERT_EQ(o.candidates, expected)
        << "n " << n << " first bad " << first_bad << " trial " << trial;
    // Every skipped commit is probed at most once; decisions stay logarithmic.
    EXPECT_LE(o.probes - o.decided, static_cast<int>(skipped.size()));
    EXPECT_LE(o.decided, static_cast<int>(std::ceil(std::log2(n))) + 1) << n;
  }
}

TEST(BisectNightlyStep, InTheFullProfileOnlyAndOnlyAfterAConfirmedRegression) {
  auto find = [](const std::string& profile) {
    const auto steps = k3nightly::nightly_steps(profile, true);
    const auto it =
        std::find_if(steps.begin(), steps.end(), [](const auto& s) { return s.name == "bisect"; });
    return it == steps.end() ? std::optional<k3nightly::NightlyStep>() : std::optional(*it);
  };
  EXPECT_FALSE(find("quick"));
  EXPECT_FALSE(find("smoke"));
  const auto step = find("full");
  ASSERT_TRUE(step);
  k3nightly::NightlyState s;
  s.dir = "/nightly/2026-12-02T0300Z";
  EXPECT_NE(step->skip(s), "");  // no report yet
  s.exit_codes["report"] = 0;
  EXPECT_NE(step->skip(s), "");
  s.exit_codes["report"] = 4;
  EXPECT_EQ(step->skip(s), "");
  const auto args = step->args(s);
  EXPECT_NE(std::find(args.begin(), args.end(), "--from-nightly"), args.end());
  EXPECT_NE(std::find(args.begin(), args.end(), s.dir), args.end());
}

}  // namespace
