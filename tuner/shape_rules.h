// Rules for shapes no entry covers: from the shapes measured for one (op, path), a decision tree
// over the shape class whose leaves are whole configurations, fitted on the measured landscape
// (every configuration's objective at every shape), not only on the winners. The table carries the
// tree as data (its "rules"); the kernel library walks it (k3k::TuningTable::apply_rule) with the
// same integer compares as predict() here.
//
// Why this form: the parameters interact (tile width with workers, the TCM knobs with each other),
// so a leaf holds one configuration measured on all of its shapes rather than one value per
// parameter; and a leaf is chosen by the loss it would cause on its shapes (objective over each
// shape's best), so a configuration that is second-best everywhere beats one that wins half the
// shapes and loses badly on the rest. Splits are between measured class values, at their
// geometric midpoint (a threshold in log2 shape space). Docs: docs/tuning-and-tables.md, "Rules".
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace k3tuner {

// One measured shape of an (op, path).
struct ShapeLandscape {
  std::string label;                             // the shape as given, e.g. "k=2048,n=6144"
  std::map<std::string, std::int64_t> cls;       // k3k::rules::shape_class of the shape
  std::map<std::string, double> cost;            // configuration key -> objective (lower is better)
  std::string best, defaults;                    // configuration keys
  double loss(const std::string& config) const;  // cost / best - 1; +inf when not measured
};

struct RuleOptions {
  int max_depth = 3;
  std::size_t min_leaf = 1;  // shapes a leaf must hold
  // A split must lower the summed loss by more than this (exact counts: any gain is real).
  double min_gain = 1e-6;
};

struct ShapeRule {
  struct Node {
    std::string key;  // split on this class key; empty: a leaf
    std::int64_t below = 0;
    std::size_t then_node = 0, else_node = 0;
    std::string config;  // leaf: the configuration key
  };
  std::vector<Node> nodes;  // preorder: children after their parent (the loader requires it)
  double loss = 0;          // summed loss on the shapes it was fitted on
  std::size_t shapes = 0;
  // The configuration key for a class (the walk the loader makes).
  const std::string& predict(const std::map<std::string, std::int64_t>& cls) const;
  // The table's form: {"op", "path", "nodes", "fit"}; `params_of` maps a configuration key to its
  // parameters as a table entry writes them.
  nlohmann::json to_json(const std::string& op, const std::string& path,
                         const std::map<std::string, nlohmann::json>& params_of) const;
};

// Fits the rule on `shapes` (at least one; configurations unmeasured on a shape are never chosen
// for a leaf holding it). Deterministic.
ShapeRule fit_shape_rule(const std::vector<ShapeLandscape>& shapes,
                         const RuleOptions& options = {});

// Leave-one-shape-out: each shape's loss under the rule fitted on the others, under the nearest
// class of the others (k3k::rules::nearest_class, its winner) and under the defaults.
struct HeldOutShape {
  std::string label;
  double rule = 0, nearest = 0, defaults = 0;
};
std::vector<HeldOutShape> held_out(const std::vector<ShapeLandscape>& shapes,
                                   const RuleOptions& options = {});

// `tune --suggest N`: which shapes to measure next. A candidate is a shape of the models not yet
// measured, or an off-grid shape (offgrid_candidates). Its predicted loss is what the table would
// lose there today, which measuring it removes (it gets its own entry) and which the refitted rule
// then loses less of nearby: the mean held-out loss of the rule at the (up to) two measured shapes
// nearest to it (sum of |log2| ratios over the class keys), plus, where the rule and the nearest
// class choose differently for it, how far apart those two choices are at the nearest measured
// shape (the fallbacks disagree there, so one of them is wrong). Ties: the candidate farther from
// everything measured first.
struct CandidateShape {
  std::string label;                        // k=v,... as tune --shape takes it
  std::map<std::string, std::int64_t> cls;  // its class
  std::string origin;                       // "model NAME" or "off-grid"
};
struct Suggestion {
  CandidateShape shape;
  double predicted_loss = 0, distance = 0;  // distance: to the nearest measured class
  std::string nearest;                      // that measured shape's label
};
std::vector<Suggestion> suggest_shapes(const std::vector<ShapeLandscape>& measured,
                                       const std::vector<CandidateShape>& candidates,
                                       std::size_t count, const RuleOptions& options = {});
// Off-grid candidates around measured shapes (as k=v maps): for each shape and each of its sizes
// k, n, m, seq and ctx, the geometric midpoint to the next larger measured value of that size
// (k rounded to a multiple of 64), the other sizes kept.
std::vector<std::map<std::string, std::int64_t>> offgrid_candidates(
    const std::vector<std::map<std::string, std::int64_t>>& measured);

}  // namespace k3tuner
