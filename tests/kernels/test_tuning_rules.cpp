// How a tuning table answers shapes it has no entry for (k3k/tuning.h): the nearest class of the
// same op and layer, a rule fitted over the classes (checked before the nearest class), every rule
// rejection with its one-line message, and the decode_path gate the loader accepts.
#include <gtest/gtest.h>

#include <functional>
#include <string>

#include <nlohmann/json.hpp>

#include "k3k/tuning.h"
#include "tuning_table_support.h"

namespace k3k {
namespace {

using namespace tuning_test;

TEST(TuningTable, NearestClassOfTheSameOpAndPath) {
  json t = valid_table();
  t["entries"] = {entry("linear_decode", "generic", {{"k", 2048}, {"n", 2048}}, {{"tile_n", 64}}),
                  entry("linear_decode", "generic", {{"k", 2048}, {"n", 6144}}, {{"tile_n", 256}}),
                  entry("linear_decode", "rvv", {{"k", 2048}, {"n", 1024}}, {{"tile_n", 32}})};
  std::string problem;
  const auto table = parse(t, problem);
  ASSERT_TRUE(table) << problem;
  auto id = [&](KernelPath p, std::int64_t k, std::int64_t n) {
    const TuningEntry* e = table->find("linear_decode", p, {{"k", k}, {"n", n}});
    return e ? e->id : std::string("none");
  };
  EXPECT_EQ(id(KernelPath::kGeneric, 2048, 2048), "linear_decode/generic/k2048/n2048");
  EXPECT_EQ(id(KernelPath::kGeneric, 2048, 4096),
            "linear_decode/generic/k2048/n6144");  // log2 distance 0.58 vs 1
  EXPECT_EQ(id(KernelPath::kGeneric, 2048, 3000),
            "linear_decode/generic/k2048/n2048");  // 0.55 vs 1.03
  EXPECT_EQ(id(KernelPath::kGeneric, 1024, 1024), "linear_decode/generic/k2048/n2048");
  EXPECT_EQ(id(KernelPath::kRvv, 2048, 6144),
            "linear_decode/rvv/k2048/n1024");  // only entry of that path
  EXPECT_EQ(id(KernelPath::kIme2, 2048, 2048), "none");
  EXPECT_EQ(
      table->find("linear_prefill", KernelPath::kGeneric, {{"m", 4}, {"k", 2048}, {"n", 2048}}),
      nullptr);
  const auto cls = tuning_shape_class("linear_prefill", {{"m", 100}, {"k", 2048}, {"n", 2048}});
  EXPECT_EQ(cls.at("m_bucket"), 128);
  EXPECT_EQ(tuning_shape_class("attn_decode", {{"ctx", 1000}, {"head_dim", 128}}).at("ctx_bucket"),
            1024);
}

// A decode rule over n: below 3072 one leaf, else a split over k. Nodes in preorder.
json decode_rule(const std::string& path = "generic") {
  return {{"op", "linear_decode"},
          {"path", path},
          {"fit", {{"shapes", 5}, {"loss", 0.01}}},
          {"nodes",
           {{{"key", "n"}, {"below", 3072}, {"then", 1}, {"else", 2}},
            {{"params", {{"tile_n", 64}, {"weight_rows", 64}}}},
            {{"key", "k"}, {"below", 1448}, {"then", 3}, {"else", 4}},
            {{"params", {{"tile_n", 256}}}},
            {{"params", {{"tile_n", 128}, {"workers", 1}}}}}}};
}

// Lookup order: the exact class's entry, else the op's rule, else the nearest class; a leaf is
// an entry marked from_rule whose id names the rule's node, and the walk's decisions are shown.
TEST(TuningTable, ARuleAnswersShapesWithoutAnEntryBeforeTheNearestClass) {
  json t = valid_table();
  t["entries"] = {entry("linear_decode", "generic", {{"k", 2048}, {"n", 2048}}, {{"tile_n", 32}}),
                  entry("linear_decode", "rvv", {{"k", 2048}, {"n", 2048}}, {{"tile_n", 96}}),
                  entry("linear_prefill", "generic", {{"m_bucket", 8}, {"k", 256}, {"n", 96}},
                        {{"tile_n", 64}})};
  t["rules"] = {decode_rule()};
  std::string problem;
  const auto table = parse(t, problem);
  ASSERT_TRUE(table) << problem;
  auto at = [&](KernelPath p, std::int64_t k, std::int64_t n) {
    return table->find("linear_decode", p, {{"k", k}, {"n", n}});
  };
  EXPECT_EQ(at(KernelPath::kGeneric, 2048, 2048)->id, "linear_decode/generic/k2048/n2048");
  EXPECT_FALSE(at(KernelPath::kGeneric, 2048, 2048)->from_rule);
  const TuningEntry* small = at(KernelPath::kGeneric, 2048, 1024);
  ASSERT_TRUE(small);
  EXPECT_TRUE(small->from_rule);
  EXPECT_EQ(small->id, "linear_decode/generic/rule/1");
  EXPECT_EQ(std::get<std::int64_t>(small->params.at("weight_rows")), 64);
  EXPECT_EQ(at(KernelPath::kGeneric, 1024, 6144)->id, "linear_decode/generic/rule/3");
  EXPECT_EQ(at(KernelPath::kGeneric, 1472, 6144)->id, "linear_decode/generic/rule/4");
  EXPECT_EQ(at(KernelPath::kGeneric, 1408, 3072)->id,
            "linear_decode/generic/rule/3");  // 1408 < 1448
  std::vector<RuleStep> steps;
  table->apply_rule("linear_decode", KernelPath::kGeneric, {{"k", 4096}, {"n", 5000}}, &steps);
  ASSERT_EQ(steps.size(), 2u);
  EXPECT_EQ(steps[0].key, "n");
  EXPECT_EQ(steps[0].value, 5000);
  EXPECT_FALSE(steps[0].took_below);
  EXPECT_EQ(steps[1].key, "k");
  EXPECT_FALSE(steps[1].took_below);
  // No rule for rvv decode or for prefill: the nearest class, as before.
  EXPECT_EQ(at(KernelPath::kRvv, 1024, 6144)->id, "linear_decode/rvv/k2048/n2048");
  EXPECT_EQ(
      table->find("linear_prefill", KernelPath::kGeneric, {{"m", 64}, {"k", 512}, {"n", 96}})->id,
      "linear_prefill/generic/k256/m_bucket8/n96");
  // A /1 table still loads, without rules.
  t.erase("rules");
  t["schema"] = "k3tune.tuning-table/1";
  EXPECT_TRUE(parse(t, problem)) << problem;
}

TEST(TuningTable, EveryRuleRejectionIsOneLineNamingTheField) {
  struct Case {
    const char* name;
    std::function<void(json&)> damage;
    const char* expected;
  };
  auto node = [](json& t, int i) -> json& { return t["rules"][0]["nodes"][i]; };
  const std::vector<Case> cases = {
      {"rules type", [](json& t) { t["rules"] = json::object(); }, "/rules: not an array"},
      {"a /1 table", [](json& t) { t["schema"] = "k3tune.tuning-table/1"; },
       "/rules: a k3tune.tuning-table/1 table has no rules"},
      {"rule field", [](json& t) { t["rules"][0]["weights"] = 1; },
       "/rules/0/weights: not a field of a rule"},
      {"op", [](json& t) { t["rules"][0]["op"] = "softmax"; },
       "/rules/0/op: 'softmax' is not an op a table may tune"},
      {"path", [](json& t) { t["rules"][0]["path"] = "auto"; },
       "/rules/0/path: '\"auto\"' is not generic, rvv or ime2"},
      {"fit", [](json& t) { t["rules"][0]["fit"] = 3; }, "/rules/0/fit: not an object"},
      {"nodes empty", [](json& t) { t["rules"][0]["nodes"] = json::array(); },
       "/rules/0/nodes: not a non-empty array"},
      {"nodes too many",
       [](json& t) {
         t["rules"][0]["nodes"] = json::array();
         for (int i = 0; i < 5000; ++i)
           t["rules"][0]["nodes"].push_back({{"params", json::object()}});
       },
       "/rules/0/nodes: 5000 nodes, more than 4096"},
      {"second rule", [](json& t) { t["rules"].push_back(t["rules"][0]); },
       "/rules/1: a second rule for linear_decode on generic"},
      {"split key", [&](json& t) { node(t, 0)["key"] = "m_bucket"; },
       "/rules/0/nodes/0/key: 'm_bucket' is not a shape-class key of linear_decode"},
      {"split below", [&](json& t) { node(t, 0)["below"] = 0; },
       "/rules/0/nodes/0/below: 0 is outside [1, "},
      {"split below type", [&](json& t) { node(t, 0)["below"] = 1.5; },
       "/rules/0/nodes/0/below: expected an integer, found number"},
      {"cycle", [&](json& t) { node(t, 2)["then"] = 0; },
       "/rules/0/nodes/2/then: 0 is not a later node (after 2, before 5)"},
      {"self", [&](json& t) { node(t, 2)["else"] = 2; },
       "/rules/0/nodes/2/else: 2 is not a later node"},
      {"past the end", [&](json& t) { node(t, 0)["else"] = 5; },
       "/rules/0/nodes/0/else: 5 is not a later node"},
      {"split missing", [&](json& t) { node(t, 0).erase("then"); },
       "/rules/0/nodes/0/then: missing"},
      {"split field",
       [&](json& t) {
         node(t, 0)["params"] = json::object();
         node(t, 0)["x"] = 1;
       },
       "/rules/0/nodes/0/below: not a field of a rule leaf"},
      {"leaf param", [&](json& t) { node(t, 1)["params"]["tile_n"] = 5000; },
       "/rules/0/nodes/1/params/tile_n: 5000 is outside [1, 4096]"},
      {"leaf unknown param", [&](json& t) { node(t, 1)["params"]["q_tile"] = 8; },
       "/rules/0/nodes/1/params/q_tile: not a parameter of linear_decode"},
      {"leaf fp16 off ime2",
       [&](json& t) {
         node(t, 1)["params"]["accumulate"] = "fp16";
         node(t, 1)["hp"] = true;
       },
       "/rules/0/nodes/1/params/accumulate: fp16 needs the ime2 path"},
      {"leaf hp", [&](json& t) { node(t, 1)["hp"] = true; },
       "/rules/0/nodes/1/hp: must be true exactly when accumulate is fp16"},
      {"leaf field", [&](json& t) { node(t, 1)["why"] = "x"; },
       "/rules/0/nodes/1/why: not a field of a rule leaf"},
      {"node type", [&](json& t) { node(t, 3) = 7; }, "/rules/0/nodes/3: not an object"},
  };
  for (const auto& c : cases) {
    json t = valid_table();
    t["rules"] = {decode_rule()};
    c.damage(t);
    std::string problem;
    EXPECT_FALSE(parse(t, problem)) << c.name;
    EXPECT_NE(problem.find(c.expected), std::string::npos) << c.name << ": " << problem;
    EXPECT_EQ(problem.find('\n'), std::string::npos) << c.name;
  }
}

// A fitted decode_path gate (what `k3tune tune-gates --gate decode_path --table` writes) is
// accepted with its figures; its rule is ime2 iff K >= k_min and N*K >= w_min.
TEST(TuningTable, AcceptsADecodePathGate) {
  json t = valid_table();
  t["gates"]["decode_path"] = {{"use", "threshold"}, {"k_min", 1024},     {"w_min", 1 << 21},
                               {"loss", 0.012},      {"wrong_shapes", 1}, {"shapes", 8}};
  std::string problem;
  const auto table = parse(t, problem);
  ASSERT_TRUE(table) << problem;
  ASSERT_TRUE(table->decode_path_gate());
  const DecodePathGate& g = *table->decode_path_gate();
  EXPECT_EQ(g.use, "threshold");
  EXPECT_EQ(g.k_min, 1024);
  EXPECT_EQ(g.w_min, 1 << 21);
  EXPECT_TRUE(g.takes_ime2(2048, 1024));   // N*K = 2^21
  EXPECT_FALSE(g.takes_ime2(1024, 1024));  // N*K below w_min
  EXPECT_FALSE(g.takes_ime2(8192, 512));   // K below k_min
  // never and always need no bounds.
  t["gates"]["decode_path"] = {{"use", "always"}};
  const auto always = parse(t, problem);
  ASSERT_TRUE(always) << problem;
  EXPECT_TRUE(always->decode_path_gate()->takes_ime2(32, 64));
  t["gates"]["decode_path"] = {{"use", "never"}};
  const auto never = parse(t, problem);
  ASSERT_TRUE(never) << problem;
  EXPECT_FALSE(never->decode_path_gate()->takes_ime2(1 << 14, 1 << 14));
  // No gate: none.
  EXPECT_FALSE(parse(valid_table(), problem)->decode_path_gate());
}
}  // namespace
}  // namespace k3k
