#include "tuner/shape_rules.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

#include "k3k/table_rules.h"

namespace k3tuner {
namespace {

// A configuration not measured on a shape cannot be judged there; choosing it for a leaf that
// holds the shape is charged as if it were ten times the best, so a measured one always wins.
constexpr double kUnmeasuredPenalty = 10.0;

double charged(const ShapeLandscape& s, const std::string& config) {
  const double l = s.loss(config);
  return std::isfinite(l) ? l : kUnmeasuredPenalty;
}

struct Leaf {
  std::string config;
  double loss = 0;
};

// The configuration with the least summed loss on these shapes (ties: the defaults of the first
// shape, then the smallest key, so the fit is deterministic).
Leaf best_leaf(const std::vector<ShapeLandscape>& all, const std::vector<std::size_t>& idx) {
  std::set<std::string> configs;
  for (std::size_t i : idx)
    for (const auto& [key, cost] : all[i].cost) configs.insert(key);
  Leaf best{"", std::numeric_limits<double>::infinity()};
  const std::string& defaults = all[idx.front()].defaults;
  auto consider = [&](const std::string& c) {
    double sum = 0;
    for (std::size_t i : idx) sum += charged(all[i], c);
    if (sum < best.loss - 1e-12) best = {c, sum};
  };
  if (configs.contains(defaults)) consider(defaults);
  for (const auto& c : configs) consider(c);
  return best;
}

struct Split {
  std::string key;
  std::int64_t below = 0;
  double loss = std::numeric_limits<double>::infinity();
};

// The threshold between two measured class values: their geometric midpoint (a split in log2
// shape space), as an integer t with a < t <= b.
std::int64_t midpoint(std::int64_t a, std::int64_t b) {
  const auto t = static_cast<std::int64_t>(std::ceil(std::sqrt(double(a) * double(b))));
  return std::clamp(t, a + 1, b);
}

void grow(const std::vector<ShapeLandscape>& all, const std::vector<std::size_t>& idx, int depth,
          const RuleOptions& o, std::vector<ShapeRule::Node>& nodes) {
  const Leaf here = best_leaf(all, idx);
  const std::size_t at = nodes.size();
  nodes.push_back({"", 0, 0, 0, here.config});
  if (depth >= o.max_depth || idx.size() < 2 * o.min_leaf) return;
  Split best;
  for (const auto& [key, v0] : all[idx.front()].cls) {
    (void)v0;
    std::set<std::int64_t> values;
    for (std::size_t i : idx) values.insert(all[i].cls.at(key));
    for (auto it = values.begin(); std::next(it) != values.end(); ++it) {
      const std::int64_t t = midpoint(*it, *std::next(it));
      std::vector<std::size_t> lo, hi;
      for (std::size_t i : idx) (all[i].cls.at(key) < t ? lo : hi).push_back(i);
      if (lo.size() < o.min_leaf || hi.size() < o.min_leaf) continue;
      const double loss = best_leaf(all, lo).loss + best_leaf(all, hi).loss;
      if (loss < best.loss - 1e-12) best = {key, t, loss};
    }
  }
  if (best.key.empty() || best.loss >= here.loss - o.min_gain) return;
  std::vector<std::size_t> lo, hi;
  for (std::size_t i : idx) (all[i].cls.at(best.key) < best.below ? lo : hi).push_back(i);
  nodes[at] = {best.key, best.below, nodes.size(), 0, ""};
  grow(all, lo, depth + 1, o, nodes);
  nodes[at].else_node = nodes.size();
  grow(all, hi, depth + 1, o, nodes);
}

}  // namespace

double ShapeLandscape::loss(const std::string& config) const {
  const auto it = cost.find(config), b = cost.find(best);
  if (it == cost.end() || b == cost.end() || b->second <= 0)
    return std::numeric_limits<double>::infinity();
  return it->second / b->second - 1;
}

const std::string& ShapeRule::predict(const std::map<std::string, std::int64_t>& cls) const {
  std::size_t at = 0;
  while (!nodes[at].key.empty()) {
    const Node& n = nodes[at];
    at = cls.at(n.key) < n.below ? n.then_node : n.else_node;
  }
  return nodes[at].config;
}

nlohmann::json ShapeRule::to_json(const std::string& op, const std::string& path,
                                  const std::map<std::string, nlohmann::json>& params_of) const {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& n : nodes) {
    if (n.key.empty()) {
      nlohmann::json leaf = {{"params", params_of.at(n.config)}};
      if (leaf["params"].contains("accumulate"))
        leaf["hp"] = leaf["params"]["accumulate"] == "fp16";
      out.push_back(leaf);
    } else {
      out.push_back(
          {{"key", n.key}, {"below", n.below}, {"then", n.then_node}, {"else", n.else_node}});
    }
  }
  return {
      {"op", op},
      {"path", path},
      {"nodes", out},
      {"fit", {{"method", "loss tree over the shape class"}, {"shapes", shapes}, {"loss", loss}}}};
}

ShapeRule fit_shape_rule(const std::vector<ShapeLandscape>& shapes, const RuleOptions& options) {
  ShapeRule rule;
  std::vector<std::size_t> idx(shapes.size());
  for (std::size_t i = 0; i < idx.size(); ++i) idx[i] = i;
  grow(shapes, idx, 0, options, rule.nodes);
  rule.shapes = shapes.size();
  for (const auto& s : shapes) rule.loss += charged(s, rule.predict(s.cls));
  return rule;
}

std::vector<HeldOutShape> held_out(const std::vector<ShapeLandscape>& shapes,
                                   const RuleOptions& options) {
  std::vector<HeldOutShape> out;
  if (shapes.size() < 2) return out;
  for (std::size_t h = 0; h < shapes.size(); ++h) {
    std::vector<ShapeLandscape> rest;
    std::vector<const std::map<std::string, std::int64_t>*> classes;
    for (std::size_t i = 0; i < shapes.size(); ++i)
      if (i != h) rest.push_back(shapes[i]);
    for (const auto& s : rest) classes.push_back(&s.cls);
    const ShapeLandscape& x = shapes[h];
    HeldOutShape r{x.label, x.loss(fit_shape_rule(rest, options).predict(x.cls)), 0,
                   x.loss(x.defaults)};
    const auto near = k3k::rules::nearest_class(x.cls, classes);
    r.nearest = near ? x.loss(rest[*near].best) : x.loss(x.defaults);
    out.push_back(r);
  }
  return out;
}

namespace {

double log_distance(const std::map<std::string, std::int64_t>& a,
                    const std::map<std::string, std::int64_t>& b) {
  double d = 0;
  for (const auto& [k, v] : a)
    if (const auto it = b.find(k); it != b.end() && v > 0 && it->second > 0)
      d += std::abs(std::log2(double(v) / double(it->second)));
  return d;
}

}  // namespace

std::vector<Suggestion> suggest_shapes(const std::vector<ShapeLandscape>& measured,
                                       const std::vector<CandidateShape>& candidates,
                                       std::size_t count, const RuleOptions& options) {
  std::vector<Suggestion> out;
  if (measured.empty()) return out;
  const auto loo = held_out(measured, options);
  const ShapeRule rule = fit_shape_rule(measured, options);
  std::vector<const std::map<std::string, std::int64_t>*> classes;
  for (const auto& s : measured) classes.push_back(&s.cls);
  std::set<std::map<std::string, std::int64_t>> seen;
  for (const auto& s : measured) seen.insert(s.cls);
  for (const auto& c : candidates) {
    if (!seen.insert(c.cls).second) continue;  // measured, or already a candidate
    std::vector<std::pair<double, std::size_t>> by_distance;
    for (std::size_t i = 0; i < measured.size(); ++i)
      by_distance.push_back({log_distance(c.cls, measured[i].cls), i});
    std::sort(by_distance.begin(), by_distance.end());
    Suggestion s{c, 0, by_distance.front().first, measured[by_distance.front().second].label};
    if (!loo.empty()) {
      const std::size_t near = std::min<std::size_t>(2, by_distance.size());
      for (std::size_t j = 0; j < near; ++j)
        s.predicted_loss += loo[by_distance[j].second].rule / double(near);
    }
    const ShapeLandscape& closest = measured[by_distance.front().second];
    const auto fallback = k3k::rules::nearest_class(c.cls, classes);
    const std::string& by_rule = rule.predict(c.cls);
    if (fallback && measured[*fallback].best != by_rule) {
      const double a = closest.loss(by_rule), b = closest.loss(measured[*fallback].best);
      if (std::isfinite(a) && std::isfinite(b)) s.predicted_loss += std::abs(a - b);
    }
    out.push_back(std::move(s));
  }
  std::sort(out.begin(), out.end(), [](const Suggestion& a, const Suggestion& b) {
    if (a.predicted_loss != b.predicted_loss) return a.predicted_loss > b.predicted_loss;
    if (a.distance != b.distance) return a.distance > b.distance;
    return a.shape.label < b.shape.label;
  });
  if (out.size() > count) out.resize(count);
  return out;
}

std::vector<std::map<std::string, std::int64_t>> offgrid_candidates(
    const std::vector<std::map<std::string, std::int64_t>>& measured) {
  std::vector<std::map<std::string, std::int64_t>> out;
  std::set<std::map<std::string, std::int64_t>> seen(measured.begin(), measured.end());
  for (const char* key : {"k", "n", "m", "seq", "ctx"}) {
    std::set<std::int64_t> values;
    for (const auto& s : measured)
      if (const auto it = s.find(key); it != s.end()) values.insert(it->second);
    for (const auto& s : measured) {
      const auto it = s.find(key);
      if (it == s.end()) continue;
      const auto next = values.upper_bound(it->second);
      if (next == values.end()) continue;
      std::int64_t mid = midpoint(it->second, *next);
      if (std::string_view(key) == "k") mid = std::max<std::int64_t>(64, (mid + 32) / 64 * 64);
      if (mid <= it->second || mid >= *next) continue;
      auto c = s;
      c[key] = mid;
      if (seen.insert(c).second) out.push_back(c);
    }
  }
  return out;
}

}  // namespace k3tuner
