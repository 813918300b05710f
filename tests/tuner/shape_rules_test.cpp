// Rules for unmeasured shapes (tuner/shape_rules.h): the fit splits where the best configuration
// changes and chooses leaves by the loss on the landscape, not by counting winners; the kernel
// library's loader, given the rule as the table writes it, picks exactly the tuner's prediction
// for every shape; and leave-one-shape-out charges each shape the rule fitted without it.
#include <gtest/gtest.h>

#include <fstream>
#include <random>
#include <sstream>

#include <nlohmann/json.hpp>

#include "k3k/table_rules.h"
#include "k3k/tuning.h"
#include "tuner/shape_rules.h"

namespace k3tuner {
namespace {

ShapeLandscape decode_shape(std::int64_t k, std::int64_t n, std::map<std::string, double> cost) {
  ShapeLandscape s;
  s.label = "k=" + std::to_string(k) + ",n=" + std::to_string(n);
  s.cls = k3k::rules::shape_class("linear_decode", {{"k", k}, {"n", n}});
  s.cost = std::move(cost);
  s.best = std::min_element(s.cost.begin(), s.cost.end(), [](auto& a, auto& b) {
             return a.second < b.second;
           })->first;
  s.defaults = "c";
  return s;
}

TEST(ShapeRules, SplitsWhereTheBestConfigurationChangesAtTheGeometricMidpoint) {
  std::vector<ShapeLandscape> shapes;
  for (std::int64_t n : {512, 1024, 2048, 4096, 8192})
    shapes.push_back(decode_shape(
        2048, n, {{"a", n < 3000 ? 1.0 : 1.2}, {"b", n < 3000 ? 1.2 : 1.0}, {"c", 1.05}}));
  const ShapeRule rule = fit_shape_rule(shapes);
  ASSERT_EQ(rule.nodes.size(), 3u);
  EXPECT_EQ(rule.nodes[0].key, "n");
  EXPECT_EQ(rule.nodes[0].below, 2897);  // ceil(sqrt(2048 * 4096))
  EXPECT_EQ(rule.predict({{"k", 2048}, {"n", 2896}}), "a");
  EXPECT_EQ(rule.predict({{"k", 2048}, {"n", 2897}}), "b");
  EXPECT_DOUBLE_EQ(rule.loss, 0);
}

// Three shapes, leaves of two shapes at least (so no split): x wins two of them by 1% and loses
// the third by 100%; c is 1% behind everywhere. Counting winners would take x; the landscape takes
// c.
TEST(ShapeRules, LeavesMinimiseTheLossNotTheWins) {
  const std::vector<ShapeLandscape> shapes = {
      decode_shape(1024, 1024, {{"x", 1.0}, {"c", 1.01}, {"y", 1.5}}),
      decode_shape(1024, 2048, {{"x", 1.0}, {"c", 1.01}, {"y", 1.5}}),
      decode_shape(1024, 4096, {{"x", 2.0}, {"c", 1.01}, {"y", 1.0}})};
  const ShapeRule rule = fit_shape_rule(shapes, {3, 2, 1e-6});
  ASSERT_EQ(rule.nodes.size(), 1u);
  EXPECT_EQ(rule.nodes[0].config, "c");
  EXPECT_NEAR(rule.loss, 0.01 + 0.01 + 0.01, 1e-12);
}

// The loader walks the rule as the table carries it; for shapes on and off the fitted grid its
// leaf has exactly the parameters of the tuner's predicted configuration.
TEST(ShapeRules, TheLoadersRuleIsTheTunersPrediction) {
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> noise(0.0, 0.05);
  const std::vector<std::int64_t> tiles = {32, 64, 128, 256};
  std::map<std::string, nlohmann::json> params_of;
  for (auto t : tiles)
    for (std::int64_t rows : {0, 64, 256})
      params_of["tile_n=" + std::to_string(t) + ",weight_rows=" + std::to_string(rows)] = {
          {"tile_n", t}, {"weight_rows", rows}};
  std::vector<ShapeLandscape> shapes;
  for (std::int64_t k : {512, 1024, 2048, 4096, 9728})
    for (std::int64_t n : {256, 1024, 3072, 6144, 151936}) {
      std::map<std::string, double> cost;
      for (const auto& [key, p] : params_of) {
        // The best tile grows with n, the best rows with k; plus noise so leaves differ.
        const double tile = std::log2(double(p["tile_n"].get<std::int64_t>())),
                     want = std::log2(double(n)) - 5;
        const double rows = p["weight_rows"].get<std::int64_t>(), rows_want = k >= 2048 ? 256 : 0;
        cost[key] = 1 + 0.02 * std::abs(tile - want) + (rows == rows_want ? 0 : 0.03) + noise(rng);
      }
      ShapeLandscape s = decode_shape(k, n, cost);
      s.defaults = "tile_n=64,weight_rows=0";
      shapes.push_back(s);
    }
  const ShapeRule rule = fit_shape_rule(shapes, {4, 1, 0.0});
  EXPECT_GT(rule.nodes.size(), 5u);  // a tree, not a constant
  const nlohmann::json table = {
      {"schema", std::string(k3k::rules::kTuningTableSchema)},
      {"kernel_abi", k3k::rules::kKernelAbiVersion},
      {"board",
       {{"fingerprint",
         {{"marchid", nullptr},
          {"vlen", 256},
          {"cpus", 2},
          {"tcm", {{"backend", "off"}, {"blocks", 0}, {"block_bytes", 0}}}}}}},
      {"entries", nlohmann::json::array()},
      {"rules", {rule.to_json("linear_decode", "rvv", params_of)}}};
  std::string problem;
  const auto loaded = k3k::TuningTable::parse(table.dump(), nullptr, problem);
  ASSERT_TRUE(loaded) << problem;
  std::uniform_int_distribution<std::int64_t> k64(1, 200), n(1, 200000);
  int checked = 0;
  for (int i = 0; i < 2000; ++i) {
    const std::map<std::string, std::int64_t> shape = {{"k", 64 * k64(rng)}, {"n", n(rng)}};
    const k3k::TuningEntry* leaf = loaded->find("linear_decode", k3k::KernelPath::kRvv, shape);
    ASSERT_TRUE(leaf);
    ASSERT_TRUE(leaf->from_rule);
    const nlohmann::json& want =
        params_of.at(rule.predict(k3k::rules::shape_class("linear_decode", shape)));
    ASSERT_EQ(std::get<std::int64_t>(leaf->params.at("tile_n")),
              want["tile_n"].get<std::int64_t>());
    ASSERT_EQ(std::get<std::int64_t>(leaf->params.at("weight_rows")),
              want["weight_rows"].get<std::int64_t>());
    ++checked;
  }
  EXPECT_EQ(checked, 2000);
}

TEST(ShapeRules, HeldOutChargesEachShapeTheRuleFittedWithoutIt) {
  std::vector<ShapeLandscape> shapes;
  for (std::int64_t n : {512, 1024, 2048, 4096, 8192, 16384})
    shapes.push_back(decode_shape(
        2048, n, {{"a", n < 3000 ? 1.0 : 1.2}, {"b", n < 3000 ? 1.3 : 1.0}, {"c", 1.1}}));
  const auto h = held_out(shapes);
  ASSERT_EQ(h.size(), shapes.size());
  // Two shapes on each side of the change remain when one is left out, and the rule finds it,
  // with its threshold at the geometric midpoint of the measured values next to it: without 2048
  // that is 2048 itself (1024 .. 4096), which then takes b (30% worse there). Everywhere else the
  // rule chooses the shape's best.
  for (std::size_t i = 0; i < h.size(); ++i)
    EXPECT_NEAR(h[i].rule, i == 2 ? 0.3 : 0.0, 1e-12) << h[i].label;
  // The defaults (c) lose 10% where a is best and 10% where b is.
  EXPECT_NEAR(h[0].defaults, 0.1, 1e-12);
  EXPECT_NEAR(h[5].defaults, 0.1, 1e-12);
  // The nearest class of 2048 without it ties 1024 and 4096 and takes the smaller (a: right);
  // of 4096 it ties 2048 and 8192 and takes 2048 (a: 20% worse).
  EXPECT_NEAR(h[2].nearest, 0.0, 1e-12);
  EXPECT_NEAR(h[3].nearest, 0.2, 1e-12);
}

// Suggestions go where the held-out rule loses (between the shapes where the best changes), not
// where everything agrees; measured classes and repeated candidates are never suggested.
TEST(ShapeRules, SuggestionsGoWhereTheHeldOutRuleLoses) {
  std::vector<ShapeLandscape> shapes;
  for (std::int64_t n : {512, 1024, 2048, 4096, 8192, 16384})
    shapes.push_back(decode_shape(
        2048, n, {{"a", n < 3000 ? 1.0 : 1.2}, {"b", n < 3000 ? 1.3 : 1.0}, {"c", 1.1}}));
  auto candidate = [](std::int64_t n) {
    return CandidateShape{"k=2048,n=" + std::to_string(n), {{"k", 2048}, {"n", n}}, "off-grid"};
  };
  const auto s = suggest_shapes(
      shapes, {candidate(700), candidate(2900), candidate(12000), candidate(4096), candidate(2900)},
      2);
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s[0].shape.label, "k=2048,n=2900");  // next to 2048, where the held-out rule lost 30%
  EXPECT_GT(s[0].predicted_loss, 0.1);
  EXPECT_NE(s[1].shape.label, "k=2048,n=4096");  // measured
  EXPECT_NE(s[1].shape.label, s[0].shape.label);
  // Off-grid candidates: midpoints to the next measured value of each size, k in whole blocks.
  const auto off = offgrid_candidates({{{"k", 1024}, {"n", 1024}}, {{"k", 4096}, {"n", 4096}}});
  ASSERT_EQ(off.size(), 2u);
  EXPECT_EQ(off[0], (std::map<std::string, std::int64_t>{{"k", 2048}, {"n", 1024}}));
  EXPECT_EQ(off[1], (std::map<std::string, std::int64_t>{{"k", 1024}, {"n", 2048}}));
}

// The table fuzzer's rule seeds (tests/fuzz/corpus/tuning_table) mean what their names say, for
// the board the corpus is written for: the valid one loads and its rule answers, each bad one is
// refused with its one line.
TEST(ShapeRules, TheFuzzersRuleSeedsAreAcceptedOrRefusedAsNamed) {
  k3k::BoardFingerprint board;
  board.cpus = 2;
  board.tcm_backend = "emulated";
  board.tcm_blocks = 8;
  board.tcm_block_bytes = 393216;
  auto load = [&](const std::string& name, std::string& problem) {
    std::ifstream f(std::string(K3TUNE_ROOT) + "/tests/fuzz/corpus/tuning_table/" + name + ".json");
    std::stringstream text;
    text << f.rdbuf();
    EXPECT_FALSE(text.str().empty()) << name;
    return k3k::TuningTable::parse(text.str(), board, problem);
  };
  std::string problem;
  const auto valid = load("valid_rules", problem);
  ASSERT_TRUE(valid) << problem;
  EXPECT_EQ(valid->rules().size(), 2u);
  EXPECT_EQ(valid->find("linear_decode", k3k::KernelPath::kGeneric, {{"k", 4096}, {"n", 8192}})->id,
            "linear_decode/generic/rule/4");
  const std::map<std::string, std::string> bad = {
      {"bad_rules_cycle", "/rules/0/nodes/2/then: 0 is not a later node (after 2, before 5)"},
      {"bad_rules_in_v1", "/rules: a k3tune.tuning-table/1 table has no rules"},
      {"bad_rules_leaf_slab", "/rules/0/nodes/4/params/slab_rows: 100 is not a multiple of 16"},
      {"bad_rules_split_key",
       "/rules/0/nodes/0/key: 'm_bucket' is not a shape-class key of linear_decode"}};
  for (const auto& [name, why] : bad) {
    EXPECT_FALSE(load(name, problem)) << name;
    EXPECT_EQ(problem, why) << name;
  }
}

}  // namespace
}  // namespace k3tuner
