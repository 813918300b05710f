#include "tuner/strategy.h"

#include "harness/host/stats/round_pairs.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <iterator>
#include <limits>
#include <map>
#include <set>
#include <stdexcept>

#include <fmt/format.h>
#include <boost/math/distributions/students_t.hpp>

namespace k3tuner {

double Candidate::mean() const {
  return values.empty() ? std::numeric_limits<double>::infinity() : k3stats::mean(values);
}

std::size_t best_by_mean(const std::vector<Candidate>& c, const std::vector<std::size_t>& allowed) {
  std::size_t best = SIZE_MAX;
  auto consider = [&](std::size_t i) {
    if (c[i].rejected || c[i].values.empty()) return;
    if (best == SIZE_MAX || c[i].mean() < c[best].mean()) best = i;
  };
  if (allowed.empty()) {
    for (std::size_t i = 0; i < c.size(); ++i) consider(i);
  } else {
    for (std::size_t i : allowed) consider(i);
  }
  return best;
}

std::size_t Strategy::choose(const std::vector<Candidate>& c) const {
  return best_by_mean(c);
}

namespace {

// Every candidate, `processes` each, in rounds.
class Exhaustive final : public Strategy {
 public:
  explicit Exhaustive(StrategyOptions o) : o_(o) {}
  std::string name() const override { return "exhaustive"; }
  std::vector<std::size_t> next_round(const std::vector<Candidate>& c) override {
    const int want = o_.deterministic ? 1 : o_.processes;
    std::vector<std::size_t> r;
    for (std::size_t i = 0; i < c.size(); ++i)
      if (!c[i].rejected && c[i].measurements() < want) r.push_back(i);
    return r;
  }

 private:
  StrategyOptions o_;
};

// A seeded sample of the candidates (the defaults always in), `processes` each.
class RandomSearch final : public Strategy {
 public:
  explicit RandomSearch(StrategyOptions o) : o_(o) {}
  std::string name() const override { return "random"; }
  std::vector<std::size_t> next_round(const std::vector<Candidate>& c) override {
    if (chosen_.empty()) {
      const std::size_t n = o_.random_samples > 0 ? static_cast<std::size_t>(o_.random_samples)
                                                  : std::max<std::size_t>(1, (c.size() + 3) / 4);
      std::vector<std::size_t> rest;
      for (std::size_t i = 1; i < c.size(); ++i) rest.push_back(i);
      std::mt19937_64 rng(o_.seed);
      std::shuffle(rest.begin(), rest.end(), rng);
      chosen_.push_back(0);
      for (std::size_t i = 0; i < rest.size() && chosen_.size() < n; ++i)
        chosen_.push_back(rest[i]);
      std::sort(chosen_.begin(), chosen_.end());
    }
    const int want = o_.deterministic ? 1 : o_.processes;
    std::vector<std::size_t> r;
    for (std::size_t i : chosen_)
      if (!c[i].rejected && c[i].measurements() < want) r.push_back(i);
    return r;
  }
  std::size_t choose(const std::vector<Candidate>& c) const override {
    return best_by_mean(c, chosen_);
  }

 private:
  StrategyOptions o_;
  std::vector<std::size_t> chosen_;
};

// Racing: every candidate gets one process per round; from min_rounds on, a candidate is dropped
// when the paired test on per-round log ratios shows it slower than the current best by at least
// min_effect. The test's level is race_error / (max_rounds - min_rounds + 1): the true best meets
// at most one elimination test per round, so by the union bound it is dropped with probability at
// most race_error over the whole race. The race ends with one survivor or at max_rounds.
struct Pooled {
  double variance = 0, df = 0;
};

class Racing final : public Strategy {
 public:
  explicit Racing(StrategyOptions o) : o_(o) {}
  std::string name() const override { return "racing"; }
  std::vector<std::size_t> next_round(const std::vector<Candidate>& c) override {
    if (alive_.empty() && !started_) {
      for (std::size_t i = 0; i < c.size(); ++i) alive_.insert(i);
      started_ = true;
    }
    for (auto it = alive_.begin(); it != alive_.end();)
      it = c[*it].rejected ? alive_.erase(it) : std::next(it);
    if (o_.deterministic) return first_pass_then_stop(c);
    int rounds = 0;
    for (std::size_t i : alive_) rounds = std::max(rounds, c[i].measurements());
    if (rounds >= o_.min_rounds) eliminate(c);
    if (contenders(c) <= 1 || rounds >= o_.max_rounds) return {};
    return {alive_.begin(), alive_.end()};
  }
  std::size_t choose(const std::vector<Candidate>& c) const override {
    return best_by_mean(c, {alive_.begin(), alive_.end()});
  }
  std::string summary() const override {
    return fmt::format(
        "{} candidates dropped as slower; {} left{}", dropped_, alive_.size(),
        defaults_beaten_ ? " (the defaults beaten, kept in the race as the reference)" : "");
  }

 private:
  // The defaults are never dropped: they run in every round the race runs, so the chosen
  // configuration's speed-up over them comes from as many paired rounds as the race had (dropped
  // after two rounds, the table entry's interval was [0.16, 21.95]). Once they are beaten they no
  // longer count as a contender: the race ends when one other candidate is left.
  std::size_t contenders(const std::vector<Candidate>& c) const {
    std::size_t n = 0;
    for (std::size_t i : alive_) n += !(c[i].is_default && defaults_beaten_);
    return n;
  }

  std::vector<std::size_t> first_pass_then_stop(const std::vector<Candidate>& c) {
    std::vector<std::size_t> r;
    for (std::size_t i : alive_)
      if (c[i].measurements() < 1) r.push_back(i);
    return r;
  }

  void eliminate(const std::vector<Candidate>& c) {
    const std::size_t best = best_by_mean(c, {alive_.begin(), alive_.end()});
    if (best == SIZE_MAX) return;
    const double level = o_.race_error / std::max(1, o_.max_rounds - o_.min_rounds + 1);
    const Pooled pooled = pooled_noise(c);
    for (auto it = alive_.begin(); it != alive_.end();) {
      const std::size_t i = *it;
      if (i != best && slower(c[best], c[i], level, pooled)) {
        if (c[i].is_default) {
          defaults_beaten_ = true;
          ++it;
          continue;
        }
        it = alive_.erase(it);
        ++dropped_;
      } else {
        ++it;
      }
    }
  }

  // One-sided: is b slower than a, by at least min_effect, at this level? Paired by round: the
  // difference of the two candidates' log values in the rounds both ran. Its noise is the larger of
  // the pair's own and the residual noise pooled over every candidate still in the race (a two-way
  // layout, candidate + round + error, in log space where the machine's noise is multiplicative).
  // Pooling is what lets the first test come after two rounds: alone, two rounds give one degree
  // of freedom and a useless t quantile; pooled over N candidates they give N - 1.
  bool slower(const Candidate& a, const Candidate& b, double level, const Pooled& pooled) const {
    std::vector<double> d;
    const auto pairs = k3stats::pair_by_round(a.rounds, a.values, b.rounds, b.values);
    for (std::size_t i = 0; i < pairs.a.size(); ++i) d.push_back(std::log(pairs.b[i] / pairs.a[i]));
    if (d.size() < 2) return false;
    const double m = k3stats::mean(d);
    if (std::exp(m) - 1 < o_.min_effect) return false;
    double var = d.size() >= 3 ? std::pow(k3stats::sample_stddev(d), 2) : 0.0;
    double df = d.size() >= 3 ? double(d.size() - 1) : 0.0;
    if (pooled.df > 0 && 2 * pooled.variance >= var) {  // the variance of a difference of two
      var = 2 * pooled.variance;
      df = pooled.df;
    }
    if (df <= 0) return false;
    if (var == 0) return true;
    const double t = m / std::sqrt(var / double(d.size()));
    const boost::math::students_t dist(df);
    return boost::math::cdf(boost::math::complement(dist, t)) < level;
  }

  // Residual variance of log values over the alive candidates and the rounds all of them ran.
  Pooled pooled_noise(const std::vector<Candidate>& c) const {
    std::vector<std::size_t> ids;
    for (std::size_t i : alive_)
      if (!c[i].values.empty()) ids.push_back(i);
    if (ids.size() < 2) return {};
    std::set<int> common(c[ids[0]].rounds.begin(), c[ids[0]].rounds.end());
    for (std::size_t i : ids) {
      std::set<int> mine(c[i].rounds.begin(), c[i].rounds.end()), keep;
      std::set_intersection(common.begin(), common.end(), mine.begin(), mine.end(),
                            std::inserter(keep, keep.end()));
      common = std::move(keep);
    }
    const std::size_t n = ids.size(), r = common.size();
    if (r < 2) return {};
    std::vector<std::vector<double>> x(n);
    for (std::size_t k = 0; k < n; ++k)
      for (std::size_t j = 0; j < c[ids[k]].rounds.size(); ++j)
        if (common.count(c[ids[k]].rounds[j])) x[k].push_back(std::log(c[ids[k]].values[j]));
    std::vector<double> row(n, 0), col(r, 0);
    double all = 0;
    for (std::size_t k = 0; k < n; ++k)
      for (std::size_t j = 0; j < r; ++j) {
        row[k] += x[k][j] / double(r);
        col[j] += x[k][j] / double(n);
        all += x[k][j] / double(n * r);
      }
    double ss = 0;
    for (std::size_t k = 0; k < n; ++k)
      for (std::size_t j = 0; j < r; ++j) ss += std::pow(x[k][j] - row[k] - col[j] + all, 2);
    const double df = double((n - 1) * (r - 1));
    return {ss / df, df};
  }

  StrategyOptions o_;
  std::set<std::size_t> alive_;
  bool started_ = false, defaults_beaten_ = false;
  int dropped_ = 0;
};

// Coordinate descent from the defaults: for each knob in turn, the candidates that differ from the
// current point only in that knob are measured (`processes` each, interleaved; once when the
// objective is exact) and the best becomes the current point. Passes repeat until one changes
// nothing, or max_sweeps; then the best few meet in the finals.
class Coordinate final : public Strategy {
 public:
  Coordinate(const SearchSpace& space, StrategyOptions o) : o_(o) {
    for (const auto& k : space.knobs()) knobs_.push_back(k.name);
  }
  std::string name() const override { return "coordinate"; }
  std::vector<std::size_t> next_round(const std::vector<Candidate>& c) override {
    if (current_ == SIZE_MAX) current_ = 0;  // the defaults (enumerated first when valid)
    if (descended_) return finals_round(c);
    for (;;) {
      if (line_.empty() && !start_line(c)) return finals_round(c);
      auto r = line_round(c);
      if (!r.empty()) return r;
      finish_line(c);
    }
  }
  std::size_t choose(const std::vector<Candidate>& c) const override {
    return best_by_mean(c, finalists_.empty()
                               ? std::vector<std::size_t>(visited_.begin(), visited_.end())
                               : finalists_);
  }
  std::string summary() const override {
    return fmt::format(
        "{} sweeps over {} knobs, {} branches into knobs a value opens, {} candidates visited, {} "
        "finalists",
        sweep_ + 1, knobs_.size(), branch_count_, visited_.size(), finalists_.size());
  }

 private:
  // The finals: the lowest mean of many candidates measured a few times each is biased low (the
  // winner's curse), and the descent's point is just that. So the best few by mean are measured
  // again, together in interleaved rounds, until each has twice the processes, and the choice is
  // made among them on all their measurements. Exact objectives need no finals.
  std::vector<std::size_t> finals_round(const std::vector<Candidate>& c) {
    if (o_.deterministic || o_.finalists <= 1) return {};
    if (finalists_.empty()) {
      for (std::size_t i : visited_)
        if (!c[i].rejected && !c[i].values.empty()) finalists_.push_back(i);
      std::sort(finalists_.begin(), finalists_.end(), [&](std::size_t a, std::size_t b) {
        return c[a].mean() < c[b].mean() || (c[a].mean() == c[b].mean() && a < b);
      });
      if (finalists_.size() > static_cast<std::size_t>(o_.finalists))
        finalists_.resize(o_.finalists);
    }
    std::vector<std::size_t> r;
    for (std::size_t i : finalists_)
      if (!c[i].rejected && c[i].measurements() < 2 * o_.processes) r.push_back(i);
    return r;
  }

  // Picks the next line: a pending branch's, else the main descent's next knob (a new sweep after
  // the last). False when the descent is over.
  bool start_line(const std::vector<Candidate>& c) {
    for (;;) {
      if (!branches_.empty()) {
        Branch& b = branches_.front();
        if (b.next < b.knobs.size()) {
          line_anchor_ = b.best;
          line_ = line_through(c, b.best, b.knobs[b.next]);
          return true;
        }
        if (c[b.best].mean() < c[line_winner_].mean()) line_winner_ = b.best;
        branches_.pop_front();
        continue;
      }
      if (line_winner_ != SIZE_MAX) {  // the main line and its branches are done
        if (line_winner_ != current_) {
          current_ = line_winner_;
          changed_ = true;
        }
        line_winner_ = SIZE_MAX;
        ++knob_;
      }
      if (knob_ == knobs_.size()) {
        if (!changed_ || sweep_ + 1 >= o_.max_sweeps) {
          descended_ = true;
          return false;
        }
        ++sweep_;
        knob_ = 0;
        changed_ = false;
      }
      line_anchor_ = current_;
      line_ = line_through(c, current_, knobs_[knob_]);
      return true;
    }
  }

  // A main line's values can switch other knobs on (tcm = on opens slab_rows and pairing); such a
  // value is judged at the defaults of the knobs it opens, where it may lose to a point it would
  // beat once they are tuned. So each line value that opens knobs the winner lacks gets a branch:
  // lines over the opened knobs from that value, and the branch's best competes with the winner.
  void finish_line(const std::vector<Candidate>& c) {
    const std::size_t winner = best_by_mean(c, line_alive_);
    for (std::size_t i : line_)
      if (!c[i].values.empty() || c[i].rejected) visited_.insert(i);
    if (!branches_.empty()) {
      Branch& b = branches_.front();
      if (winner != SIZE_MAX) b.best = winner;
      ++b.next;
    } else {
      line_winner_ = winner != SIZE_MAX ? winner : current_;
      for (std::size_t x : line_alive_) {
        if (x == line_winner_ || c[x].values.empty()) continue;
        Branch b{x, {}, 0};
        for (const auto& k : knobs_)
          if (line_through(c, x, k).size() > 1 && line_through(c, line_winner_, k).size() == 1)
            b.knobs.push_back(k);
        if (!b.knobs.empty()) {
          branches_.push_back(std::move(b));
          ++branch_count_;
        }
      }
    }
    line_.clear();
    line_alive_.clear();
  }

  std::vector<std::size_t> line_through(const std::vector<Candidate>& c, std::size_t anchor,
                                        const std::string& knob) const {
    std::vector<std::size_t> line;
    for (std::size_t i = 0; i < c.size(); ++i) {
      bool same = true;
      for (const auto& [k, v] : c[anchor].config.items())
        if (k != knob && c[i].config.at(k) != v) same = false;
      if (same) line.push_back(i);
    }
    // In the knob's order (numbers ascending), not enumeration order, which puts the defaults
    // first: the hill climb's neighbours are the next values.
    std::stable_sort(line.begin(), line.end(), [&](std::size_t a, std::size_t b) {
      return c[a].config.at(knob) < c[b].config.at(knob);
    });
    return line;
  }

  // Every candidate on the line is measured `processes` times in the line's own rounds, the current
  // point and earlier lines' candidates included: the comparison that moves the point is then made
  // between measurements that shared the machine's state, and the current point's mean, the one
  // most often compared, keeps getting sharper. Exact objectives measure each candidate once.
  std::vector<std::size_t> line_round(const std::vector<Candidate>& c) {
    if (line_alive_.empty()) {
      line_alive_ = line_;
      line_start_.clear();
      for (std::size_t i : line_) line_start_[i] = c[i].measurements();
    }
    std::erase_if(line_alive_, [&](std::size_t i) { return c[i].rejected; });
    if (o_.deterministic) return climb_round(c);
    std::vector<std::size_t> r;
    for (std::size_t i : line_alive_) {
      const int want = o_.deterministic ? 1 : line_start_[i] + o_.processes;
      if (c[i].measurements() < want) r.push_back(i);
    }
    return r;
  }

  // An exact objective walks the line instead of measuring all of it: from the best point measured
  // so far, its unmeasured neighbours in the knob's value order, until both neighbours are worse
  // (a discrete hill climb; values are listed in order in the space file). Noisy objectives cannot
  // afford it: one unlucky neighbour would stop the walk.
  std::vector<std::size_t> climb_round(const std::vector<Candidate>& c) const {
    std::size_t best = best_by_mean(c, line_alive_);
    if (best == SIZE_MAX) {  // nothing measured yet: the line's point on the descent first
      if (std::find(line_alive_.begin(), line_alive_.end(), line_anchor_) != line_alive_.end())
        return {line_anchor_};
      return line_alive_.empty() ? std::vector<std::size_t>{}
                                 : std::vector<std::size_t>{line_alive_.front()};
    }
    const auto at = std::find(line_alive_.begin(), line_alive_.end(), best);
    std::vector<std::size_t> r;
    if (at != line_alive_.begin() && c[*(at - 1)].values.empty()) r.push_back(*(at - 1));
    if (at + 1 != line_alive_.end() && c[*(at + 1)].values.empty()) r.push_back(*(at + 1));
    return r;
  }

  struct Branch {
    std::size_t best;                // the branch's best so far (its opening value at first)
    std::vector<std::string> knobs;  // the knobs it opens, one line each
    std::size_t next;
  };

  StrategyOptions o_;
  std::vector<std::string> knobs_;
  std::size_t knob_ = 0, current_ = SIZE_MAX;
  std::size_t line_winner_ = SIZE_MAX;
  std::size_t line_anchor_ = SIZE_MAX;  // the point the line passes through  // the main line's
                                        // winner while its branches run
  std::deque<Branch> branches_;
  int branch_count_ = 0;
  int sweep_ = 0;
  bool changed_ = false, descended_ = false;
  std::map<std::size_t, int>
      line_start_;  // measurements each line candidate had when the line began
  std::vector<std::size_t> line_, line_alive_, finalists_;
  std::set<std::size_t> visited_;
};

}  // namespace

int exhaustive_cost(const std::vector<Candidate>& c, const StrategyOptions& o) {
  return static_cast<int>(c.size()) * (o.deterministic ? 1 : o.processes);
}

int coordinate_cost_bound(const SearchSpace& space, const std::vector<Candidate>& c,
                          const StrategyOptions& o) {
  const int per = o.deterministic ? 1 : o.processes;
  std::size_t line_points = 0;  // one line per knob: as many points as the knob has values here
  for (const auto& knob : space.knobs()) {
    std::set<std::string> values;
    for (const auto& cand : c)
      values.insert(cand.config.contains(knob.name) ? cand.config.at(knob.name).dump() : "");
    line_points += values.size();
  }
  const int finals = o.deterministic ? 0 : o.finalists * 2 * per;
  return std::max(1, o.max_sweeps) * static_cast<int>(line_points) * per + finals;
}

const std::vector<std::string>& strategy_names() {
  static const std::vector<std::string> names = {"exhaustive", "random", "racing", "coordinate"};
  return names;
}

std::unique_ptr<Strategy> make_strategy(const std::string& name, const SearchSpace& space,
                                        const StrategyOptions& options) {
  if (name == "exhaustive") return std::make_unique<Exhaustive>(options);
  if (name == "random") return std::make_unique<RandomSearch>(options);
  if (name == "racing") return std::make_unique<Racing>(options);
  if (name == "coordinate") return std::make_unique<Coordinate>(space, options);
  throw std::invalid_argument("unknown strategy '" + name +
                              "' (known: exhaustive, random, racing, coordinate)");
}

}  // namespace k3tuner
