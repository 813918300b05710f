// The tuning-table loader (k3k/tuning.h) and the auto Linear entry points (k3k/linear_auto.h):
// every rejection reason with its one-line message, a table for another board refused, a valid
// table changing exactly the parameters it names, the nearest-class rule, loading refused while an
// auto call runs, auto calls bitwise equal to explicit calls with the same parameters, and the
// decode_path gate choosing the layer pack_linear_auto packs for.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <stdexcept>
#include <utility>

#include <nlohmann/json.hpp>

#include "k3k/linear_auto.h"
#include "k3k/tuning.h"
#include "linear_test_support.h"

namespace k3k {
namespace {

using nlohmann::json;

BoardFingerprint test_board() {
  BoardFingerprint b;
  b.cpus = 2;
  b.tcm_backend = "emulated";
  b.tcm_blocks = 8;
  b.tcm_block_bytes = 393216;
  return b;
}

json fingerprint_of(const BoardFingerprint& b) {
  return {
      {"marchid", b.marchid ? json(*b.marchid) : json(nullptr)},
      {"vlen", b.vlen_bits ? json(*b.vlen_bits) : json(nullptr)},
      {"cpu_model", "test"},
      {"cpus", b.cpus},
      {"tcm",
       {{"backend", b.tcm_backend}, {"blocks", b.tcm_blocks}, {"block_bytes", b.tcm_block_bytes}}}};
}

json entry(const std::string& op, const std::string& path, json cls, json params) {
  cls["path"] = path;
  std::string id = op + "/" + path;
  for (const auto& [k, v] : cls.items())
    if (k != "path") id += "/" + k + v.dump();
  return {{"id", id},
          {"op", op},
          {"class", cls},
          {"params", params},
          {"evidence", {{"mean", 1.0}, {"processes", 8}}}};
}

json valid_table(const BoardFingerprint& b = test_board(), const std::string& path = "generic") {
  return {{"schema", std::string(rules::kTuningTableSchema)},
          {"kernel_abi", kKernelAbiVersion},
          {"created_at", "2026-11-30T23:45:43Z"},
          {"source", {{"objective", "time"}, {"proxy", false}, {"sessions", json::array()}}},
          {"board", {{"fingerprint", fingerprint_of(b)}}},
          {"gates",
           {{"tcm_decode", {{"use", "threshold"}, {"k_min", 4096}, {"b_min_bytes", 1 << 20}}}}},
          {"entries",
           {entry("linear_decode", path, {{"k", 256}, {"n", 96}}, {{"tile_n", 32}, {"workers", 1}}),
            entry("linear_prefill", path, {{"m_bucket", 8}, {"k", 256}, {"n", 96}},
                  {{"tile_n", 64}})}}};
}

std::unique_ptr<TuningTable> parse(const json& t, std::string& problem,
                                   const BoardFingerprint& b = test_board()) {
  return TuningTable::parse(t.dump(), b, problem);
}

// The slab rule is whole packed tiles (k3k/table_rules.h): slab_rows=48 with 16-row tiles is what
// k3bench runs and the loader takes; an id that does not name its class is refused.
TEST(TuningTable, SlabRowsAreWholeWeightTilesAndIdsNameTheirClass) {
  json t = valid_table();
  t["entries"][0]["params"]["slab_rows"] = 48;
  t["entries"][0]["params"]["weight_rows"] = 16;
  std::string problem;
  EXPECT_TRUE(parse(t, problem)) << problem;
  t["entries"][0]["id"] = "linear_decode/generic/k256/n64";
  EXPECT_FALSE(parse(t, problem));
  EXPECT_EQ(problem,
            "/entries/0/id: 'linear_decode/generic/k256/n64' does not match its op and class "
            "('linear_decode/generic/k256/n96')");
}

TEST(TuningTable, ValidTableChangesExactlyTheParametersItNames) {
  std::string problem;
  const auto table = parse(valid_table(), problem);
  ASSERT_TRUE(table) << problem;
  EXPECT_EQ(table->entries().size(), 2u);
  const LinearAutoChoice defaults =
      choose_linear(nullptr, "linear_decode", KernelPath::kGeneric, {{"k", 256}, {"n", 96}});
  const LinearAutoChoice c =
      choose_linear(table.get(), "linear_decode", KernelPath::kGeneric, {{"k", 256}, {"n", 96}});
  EXPECT_EQ(c.entry, "linear_decode/generic/k256/n96");
  EXPECT_EQ(c.tiling.tile_n, 32);
  EXPECT_EQ(c.tiling.max_workers, 1);
  EXPECT_EQ(c.source.at("tile_n"), "table linear_decode/generic/k256/n96");
  EXPECT_EQ(c.source.at("workers"), "table linear_decode/generic/k256/n96");
  // Named nowhere: the defaults, untouched (the table's gate sets k_min and b_min only).
  EXPECT_EQ(c.source.at("slab_rows"), "default");
  EXPECT_EQ(c.accumulation, defaults.accumulation);
  EXPECT_EQ(c.tcm.use, defaults.tcm.use);
  EXPECT_EQ(c.tcm.slab_rows, defaults.tcm.slab_rows);
  EXPECT_EQ(c.tcm.compute_workers, defaults.tcm.compute_workers);
  EXPECT_EQ(c.tcm.pairing, defaults.tcm.pairing);
  EXPECT_EQ(c.tcm.k_min, 4096);
  EXPECT_EQ(c.tcm.b_min, 1 << 20);
  EXPECT_EQ(defaults.tiling.tile_n, LinearTiling{}.tile_n);
  EXPECT_EQ(defaults.tiling.max_workers, 0);
  // Prefill: M = 5 falls in bucket 8.
  const LinearAutoChoice p = choose_linear(table.get(), "linear_prefill", KernelPath::kGeneric,
                                           {{"m", 5}, {"k", 256}, {"n", 96}});
  EXPECT_EQ(p.tiling.tile_n, 64);
  EXPECT_EQ(p.tiling.max_workers, 0);
  EXPECT_EQ(p.source.at("ukernel"), "default");
  EXPECT_TRUE(p.tiling.ukernel.empty());
}

// The microkernel variant (ukernel) and the attention knobs (TCM attention, K/V prefetch) are
// accepted where the kernels accept them; a named variant reaches the tiling.
TEST(TuningTable, AcceptsUkernelAndAttentionKnobs) {
  const std::string variant = linear_variants(KernelPath::kGeneric).prefill.front();
  json t = valid_table();
  t["entries"][1]["params"]["ukernel"] = variant;
  t["entries"][0]["params"]["ukernel"] = "auto";
  const json attn_class = {
      {"head_dim", 128}, {"q_heads", 16}, {"kv_heads", 8}, {"ctx_bucket", 1024}};
  t["entries"].push_back(entry("attn_prefill", "generic", attn_class,
                               {{"q_tile", 16},
                                {"kv_block", 64},
                                {"prefetch", 512},
                                {"tcm", "on"},
                                {"tcm_kv_blocks", 4},
                                {"ctx_min", 2048}}));
  t["entries"].push_back(
      entry("attn_decode", "generic", attn_class, {{"chunk", 256}, {"prefetch", 1024}}));
  std::string problem;
  const auto table = parse(t, problem);
  ASSERT_TRUE(table) << problem;
  const LinearAutoChoice p = choose_linear(table.get(), "linear_prefill", KernelPath::kGeneric,
                                           {{"m", 8}, {"k", 256}, {"n", 96}});
  EXPECT_EQ(p.tiling.ukernel, variant);
  EXPECT_EQ(p.source.at("ukernel"), "table linear_prefill/generic/k256/m_bucket8/n96");
  const TuningEntry* a = table->find("attn_prefill", KernelPath::kGeneric,
                                     attn_class.get<std::map<std::string, std::int64_t>>());
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(std::get<std::int64_t>(a->params.at("tcm_kv_blocks")), 4);
  EXPECT_EQ(std::get<std::string>(a->params.at("tcm")), "on");
}

TEST(TuningTable, EveryRejectionIsOneLineNamingTheField) {
  struct Case {
    const char* name;
    std::function<void(json&)> damage;
    const char* expected;
  };
  const std::vector<Case> cases = {
      {"root", [](json& t) { t = json::array(); }, "/: expected an object, found array"},
      {"schema", [](json& t) { t["schema"] = "k3tune.tuning-table/3"; },
       "/schema: 'k3tune.tuning-table/3' is not"},
      {"abi", [](json& t) { t["kernel_abi"] = kKernelAbiVersion + 1; },
       "/kernel_abi: table for kernel ABI 3, this library is ABI 2"},
      {"abi before the KV key blocks", [](json& t) { t["kernel_abi"] = 1; },
       "/kernel_abi: table for kernel ABI 1, this library is ABI 2"},
      {"abi type", [](json& t) { t["kernel_abi"] = "1"; },
       "/kernel_abi: expected an integer, found string"},
      {"board missing", [](json& t) { t.erase("board"); }, "/board: missing"},
      {"marchid", [](json& t) { t["board"]["fingerprint"]["marchid"] = "0x8000000058000001"; },
       "/board/fingerprint/marchid: made for 0x8000000058000001, this machine has none"},
      {"vlen", [](json& t) { t["board"]["fingerprint"]["vlen"] = 1024; },
       "/board/fingerprint/vlen: made for VLEN 1024, this machine has none"},
      {"cpus", [](json& t) { t["board"]["fingerprint"]["cpus"] = 64; },
       "/board/fingerprint/cpus: made for 64 CPUs, this process may use 2"},
      {"tcm", [](json& t) { t["board"]["fingerprint"]["tcm"]["backend"] = "real"; },
       "/board/fingerprint/tcm: made for real TCM (8 x 393216 B), this machine has emulated (8 x "
       "393216 B)"},
      {"tcm backend with a newline",
       [](json& t) { t["board"]["fingerprint"]["tcm"]["backend"] = "emu\nted"; },
       "/board/fingerprint/tcm: made for emu\\x0ated TCM (8 x 393216 B)"},
      {"entries type", [](json& t) { t["entries"] = json::object(); }, "/entries: not an array"},
      {"op", [](json& t) { t["entries"][0]["op"] = "softmax"; },
       "/entries/0/op: 'softmax' is not an op a table may tune"},
      {"path", [](json& t) { t["entries"][0]["class"]["path"] = "auto"; },
       "/entries/0/class/path: '\"auto\"' is not generic, rvv or ime2"},
      {"k", [](json& t) { t["entries"][0]["class"]["k"] = 100; },
       "/entries/0/class/k: 100 is not a multiple of 64"},
      {"class key", [](json& t) { t["entries"][0]["class"].erase("n"); },
       "/entries/0/class/n: missing"},
      {"class value", [](json& t) { t["entries"][0]["class"]["n"] = -5; },
       "/entries/0/class/n: -5 is out of range"},
      {"class key name", [](json& t) { t["entries"][0]["class"]["m"] = 4; },
       "/entries/0/class/m: not a shape-class key of linear_decode"},
      {"bucket", [](json& t) { t["entries"][1]["class"]["m_bucket"] = 3; },
       "/entries/1/class/m_bucket: 3 is not a power of two"},
      {"control characters", [](json& t) { t["entries"][0]["op"] = "soft\nmax\x1b[31m"; },
       "/entries/0/op: 'soft\\x0amax\\x1b[31m' is not an op a table may tune"},
      {"param name", [](json& t) { t["entries"][0]["params"]["tile_m"] = 4; },
       "/entries/0/params/tile_m: not a parameter of linear_decode"},
      {"range", [](json& t) { t["entries"][0]["params"]["tile_n"] = 5000; },
       "/entries/0/params/tile_n: 5000 is outside [1, 4096]"},
      {"zero workers", [](json& t) { t["entries"][0]["params"]["workers"] = 0; },
       "/entries/0/params/workers: 0 is outside [1, 256]"},
      {"type", [](json& t) { t["entries"][0]["params"]["tile_n"] = "wide"; },
       "/entries/0/params/tile_n: expected an integer, found string"},
      {"float", [](json& t) { t["entries"][0]["params"]["tile_n"] = 1e30; },
       "/entries/0/params/tile_n: expected an integer, found number"},
      {"huge",
       [](json& t) { t["entries"][0]["params"]["tile_n"] = std::uint64_t{18446744073709551615u}; },
       "/entries/0/params/tile_n: 18446744073709551615 is out of range"},
      {"word", [](json& t) { t["entries"][0]["params"]["tcm"] = "maybe"; },
       "/entries/0/params/tcm: 'maybe' is not one of off, on, auto"},
      {"multiple", [](json& t) { t["entries"][0]["params"]["slab_rows"] = 40; },
       "/entries/0/params/slab_rows: 40 is not a multiple of 16"},
      {"slab of whole tiles",
       [](json& t) {
         t["entries"][0]["params"]["slab_rows"] = 48;
         t["entries"][0]["params"]["weight_rows"] = 32;
       },
       "/entries/0/params/slab_rows: 48 is not a multiple of weight_rows (32)"},
      {"ukernel name", [](json& t) { t["entries"][0]["params"]["ukernel"] = "Bad Name!"; },
       "/entries/0/params/ukernel: 'Bad Name!' is not a microkernel name"},
      {"ukernel of another layer",
       [](json& t) { t["entries"][0]["params"]["ukernel"] = "linear_decode-srows-e8m1-rvv"; },
       "/entries/0/params/ukernel: 'linear_decode-srows-e8m1-rvv' is not a generic linear_decode "
       "microkernel"},
      {"attention tcm word",
       [](json& t) {
         t["entries"].push_back(
             entry("attn_prefill", "generic",
                   {{"head_dim", 128}, {"q_heads", 16}, {"kv_heads", 8}, {"ctx_bucket", 1024}},
                   {{"tcm", "always"}}));
       },
       "/entries/2/params/tcm: 'always' is not one of off, on, auto"},
      {"attention prefetch",
       [](json& t) {
         t["entries"].push_back(
             entry("attn_decode", "generic",
                   {{"head_dim", 128}, {"q_heads", 16}, {"kv_heads", 8}, {"ctx_bucket", 1024}},
                   {{"prefetch", -64}}));
       },
       "/entries/2/params/prefetch: -64 is outside [0, 1048576]"},
      {"hp flag", [](json& t) { t["entries"][0]["hp"] = true; },
       "/entries/0/hp: must be true exactly when accumulate is fp16"},
      {"fp16 path",
       [](json& t) {
         t["entries"][0]["params"]["accumulate"] = "fp16";
         t["entries"][0]["hp"] = true;
       },
       "/entries/0/params/accumulate: fp16 needs the ime2 path"},
      {"duplicate", [](json& t) { t["entries"].push_back(t["entries"][0]); },
       "/entries/2: a second entry for linear_decode/generic/k256/n96"},
      {"gate", [](json& t) { t["gates"]["tcm_decode"]["use"] = "sometimes"; },
       "/gates/tcm_decode/use: 'sometimes' is not never, always or threshold"},
      {"gate range", [](json& t) { t["gates"]["tcm_decode"]["k_min"] = 0; },
       "/gates/tcm_decode/k_min: out of range"},
      {"gate field", [](json& t) { t["gates"]["tcm_decode"]["m_min"] = 4; },
       "/gates/tcm_decode/m_min: not a field of this gate"},
      {"decode_path use",
       [](json& t) {
         t["gates"]["decode_path"] = {{"use", "ime2"}};
       },
       "/gates/decode_path/use: 'ime2' is not never, always or threshold"},
      {"decode_path not an object", [](json& t) { t["gates"]["decode_path"] = 4096; },
       "/gates/decode_path: not an object"},
      {"decode_path k_min",
       [](json& t) {
         t["gates"]["decode_path"] = {{"use", "threshold"}, {"k_min", 0}, {"w_min", 0}};
       },
       "/gates/decode_path/k_min: out of range"},
      {"decode_path w_min",
       [](json& t) {
         t["gates"]["decode_path"] = {{"use", "threshold"}, {"k_min", 64}, {"w_min", -1}};
       },
       "/gates/decode_path/w_min: out of range"},
      {"decode_path w_min type",
       [](json& t) {
         t["gates"]["decode_path"] = {{"use", "threshold"}, {"k_min", 64}, {"w_min", "4M"}};
       },
       "/gates/decode_path/w_min: expected an integer, found string"},
      {"decode_path threshold without w_min",
       [](json& t) {
         t["gates"]["decode_path"] = {{"use", "threshold"}, {"k_min", 64}};
       },
       "/gates/decode_path/w_min: missing (use is threshold)"},
      {"decode_path field",
       [](json& t) {
         t["gates"]["decode_path"] = {{"use", "always"}, {"n_min", 64}};
       },
       "/gates/decode_path/n_min: not a field of this gate"},
      {"decode_path loss",
       [](json& t) {
         t["gates"]["decode_path"] = {{"use", "never"}, {"loss", -0.5}};
       },
       "/gates/decode_path/loss: expected a number >= 0"},
  };
  for (const auto& c : cases) {
    json t = valid_table();
    c.damage(t);
    std::string problem;
    EXPECT_FALSE(parse(t, problem)) << c.name;
    EXPECT_NE(problem.find(c.expected), std::string::npos) << c.name << ": " << problem;
    EXPECT_EQ(problem.find('\n'), std::string::npos) << c.name;
  }
  // Text that is not a table at all.
  std::string problem;
  const BoardFingerprint b = test_board();
  EXPECT_FALSE(TuningTable::parse("{\"schema\": ", b, problem));
  EXPECT_EQ(problem, "not valid JSON");
  EXPECT_FALSE(TuningTable::parse("{\"a\": NaN}", b, problem));
  EXPECT_EQ(problem, "not valid JSON");
  EXPECT_FALSE(TuningTable::parse(std::string(9 << 20, ' '), b, problem));
  EXPECT_NE(problem.find("larger than any table"), std::string::npos) << problem;
  EXPECT_FALSE(TuningTable::parse(std::string(100000, '[') + std::string(100000, ']'), b, problem));
  EXPECT_EQ(problem, "/: expected an object, found array");
}

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

class TuningTableFile : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("k3k_tuning_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
    clear_tuning_table();
  }
  void TearDown() override {
    clear_tuning_table();
    std::filesystem::remove_all(dir_);
  }
  std::string write(const std::string& name, const json& t) const {
    const auto p = (dir_ / name).string();
    std::ofstream(p) << t.dump(2);
    return p;
  }
  std::filesystem::path dir_;
};

TEST_F(TuningTableFile, ATableForAnotherBoardIsRefusedAndTheLoadedOneStays) {
  const BoardFingerprint here = running_board();
  const auto good = write("good.json", valid_table(here));
  const TableLoad l = load_tuning_table(good);
  ASSERT_TRUE(l.loaded) << l.problem;
  EXPECT_EQ(l.entries, 2u);
  const TuningTable* active = active_tuning_table();
  ASSERT_NE(active, nullptr);
  BoardFingerprint other = here;
  other.cpus += 1;
  const auto bad = write("other.json", valid_table(other));
  testing::internal::CaptureStderr();
  const TableLoad r = load_tuning_table(bad);
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_FALSE(r.loaded);
  EXPECT_NE(r.problem.find("/board/fingerprint/cpus: made for"), std::string::npos) << r.problem;
  EXPECT_EQ(err, "k3k: tuning table " + bad + ": " + r.problem + "; using the built-in defaults\n");
  EXPECT_EQ(active_tuning_table(), active);  // the earlier table stays
  EXPECT_EQ(last_table_load().problem, r.problem);
  const TableLoad missing = load_tuning_table((dir_ / "missing.json").string());
  EXPECT_EQ(missing.problem, "cannot be read");
}

TEST_F(TuningTableFile, LoadingIsRefusedWhileAnAutoCallRuns) {
  const auto path = write("t.json", valid_table(running_board()));
  {
    TuningTableUse in_flight;  // what an auto entry point holds while it runs
    testing::internal::CaptureStderr();
    const TableLoad r = load_tuning_table(path);
    testing::internal::GetCapturedStderr();
    EXPECT_FALSE(r.loaded);
    EXPECT_NE(r.problem.find("running on other threads"), std::string::npos) << r.problem;
    EXPECT_EQ(active_tuning_table(), nullptr);
  }
  EXPECT_TRUE(load_tuning_table(path).loaded);
}

TEST_F(TuningTableFile, AutoCallsAreBitwiseEqualToExplicitCallsWithTheTablesParameters) {
  using namespace linear_test;
  const std::int64_t n = 96, k = 256;
  const Weights w = make_weights(KernelPath::kGeneric, n, k, 11);
  WorkerPool pool(2);
  // The table names the layer the dispatcher would pick anyway (it must be usable here).
  const std::string layer = to_string(decide_path().path);
  json t = valid_table(running_board(), layer);
  t["entries"][0]["params"] = {{"tile_n", 32}, {"workers", 1}};
  ASSERT_TRUE(load_tuning_table(write("t.json", t)).loaded);
  const AutoLinearWeights aw = pack_linear_auto(clone_storage(w.storage));
  EXPECT_EQ(to_string(aw.path), layer);
  EXPECT_EQ(aw.path_reason, "table entry linear_decode/" + layer + "/k256/n96");
  EXPECT_EQ(aw.decode.tiling.tile_n, 32);
  EXPECT_EQ(aw.decode.tiling.max_workers, 1);
  EXPECT_EQ(aw.prefill[3].tiling.tile_n, 64);  // bucket 8

  const std::vector<float> bias = normal_vector(n, 5, 0.5);
  LinearEpilogue ep;
  ep.bias = bias.data();
  {
    const Acts a = quantize(KernelPath::kGeneric, make_activations(1, k, 7), 1, k, true, pool);
    std::vector<float> automatic(sz(n)), explicit_call(sz(n));
    linear_decode_auto(aw, a.pack, ep, automatic.data(), pool);
    linear_decode_w4b64(aw.path, a.pack, aw.packed, ep, explicit_call.data(), pool,
                        LinearTiling{32, 1});
    EXPECT_EQ(std::memcmp(automatic.data(), explicit_call.data(), automatic.size() * sizeof(float)),
              0);
  }
  {
    const std::int64_t m = 6;
    const Acts a = quantize(KernelPath::kGeneric, make_activations(m, k, 8), m, k, false, pool);
    std::vector<float> automatic(sz(m * n)), explicit_call(sz(m * n));
    linear_prefill_auto(aw, a.pack, ep, automatic.data(), pool);
    linear_prefill_w4b64(aw.path, a.pack, aw.packed, ep, explicit_call.data(), pool,
                         LinearTiling{64, 0});
    EXPECT_EQ(std::memcmp(automatic.data(), explicit_call.data(), automatic.size() * sizeof(float)),
              0);
  }
  // Without a table: the defaults and the best usable layer.
  clear_tuning_table();
  const AutoLinearWeights plain = pack_linear_auto(clone_storage(w.storage));
  EXPECT_EQ(plain.table, nullptr);
  EXPECT_EQ(plain.decode.tiling.tile_n, LinearTiling{}.tile_n);
  EXPECT_EQ(plain.path, decide_path().path);
}

// pack_linear_auto follows the table's decode_path gate for a weight no entry names: ime2 at and
// above the threshold, rvv below, each only where the layer is usable here (the ime2-emu tree under
// qemu at VLEN 1024 runs both; elsewhere the gate's refused choice falls back, and says so). Named
// Ime2* so the riscv64 trees run it under qemu.
class Ime2DecodePathGate : public TuningTableFile {
 protected:
  // The layer pack_linear_auto must take when the gate asks for `wanted`, and the reason's start.
  static std::pair<KernelPath, std::string> expected(KernelPath wanted, const std::string& why) {
    const std::string gate = std::string("table gates/decode_path");
    try {
      return {decide_path(wanted).path, gate + ": " + to_string(wanted) + " (" + why + ")"};
    } catch (const std::invalid_argument& e) {
      return {decide_path().path,
              gate + " chose " + to_string(wanted) + " (" + why + "), refused: " + e.what() + "; "};
    }
  }
  // Packs an N x K weight with the table loaded, checks the layer, its layout and the reason, and
  // that a decode call through the auto entry point equals the explicit call on that packing.
  void check(std::int64_t n, std::int64_t k, KernelPath wanted, const std::string& why) {
    using namespace linear_test;
    const Weights w = make_weights(KernelPath::kGeneric, n, k, 21);
    const AutoLinearWeights aw = pack_linear_auto(clone_storage(w.storage));
    const auto [path, reason] = expected(wanted, why);
    // In the XML report (--gtest_output=xml): which layer each run took, and why.
    RecordProperty(std::to_string(n) + "x" + std::to_string(k), aw.path_reason);
    EXPECT_EQ(aw.path, path) << n << "x" << k << ": " << aw.path_reason;
    EXPECT_EQ(aw.path_reason.rfind(reason, 0), 0u) << aw.path_reason << "\nexpected " << reason;
    EXPECT_EQ(aw.packed.layout, pack_for(path, w.storage).layout);
    WorkerPool pool(2);
    const Acts a = quantize(aw.path, make_activations(1, k, 22), 1, k, true, pool);
    std::vector<float> automatic(sz(n)), explicit_call(sz(n));
    linear_decode_auto(aw, a.pack, LinearEpilogue{}, automatic.data(), pool);
    linear_decode_w4b64(aw.path, a.pack, aw.packed, LinearEpilogue{}, explicit_call.data(), pool,
                        aw.decode.tiling);
    EXPECT_EQ(std::memcmp(automatic.data(), explicit_call.data(), automatic.size() * sizeof(float)),
              0);
  }
};

TEST_F(Ime2DecodePathGate, ChoosesIme2AboveTheThresholdAndRvvBelow) {
  const std::int64_t n = 64, k_min = 512, w_min = n * k_min;
  json t = valid_table(running_board());
  t["gates"]["decode_path"] = {{"use", "threshold"}, {"k_min", k_min}, {"w_min", w_min}};
  ASSERT_TRUE(load_tuning_table(write("t.json", t)).loaded);
  check(n, k_min, KernelPath::kIme2, "K 512 >= k_min 512, N*K 32768 >= w_min 32768");
  check(n, 2 * k_min, KernelPath::kIme2, "K 1024 >= k_min 512, N*K 65536 >= w_min 32768");
  check(n, k_min / 2, KernelPath::kRvv, "K 256 < k_min 512");
  check(n / 2, k_min, KernelPath::kRvv, "N*K 16384 < w_min 32768");
}

TEST_F(Ime2DecodePathGate, AnEntryForTheExactShapeWinsOverTheGate) {
  const std::int64_t n = 64, k = 512;
  const KernelPath best = decide_path().path;
  json t = valid_table(running_board());
  t["gates"]["decode_path"] = {{"use", best == KernelPath::kIme2 ? "never" : "always"}};
  t["entries"].push_back(
      entry("linear_decode", to_string(best), {{"k", k}, {"n", n}}, {{"tile_n", 32}}));
  ASSERT_TRUE(load_tuning_table(write("t.json", t)).loaded);
  const linear_test::Weights w = linear_test::make_weights(KernelPath::kGeneric, n, k, 23);
  const AutoLinearWeights aw = pack_linear_auto(linear_test::clone_storage(w.storage));
  EXPECT_EQ(aw.path, best);
  EXPECT_EQ(aw.path_reason,
            "table entry linear_decode/" + std::string(to_string(best)) + "/k512/n64");
  // Another shape: the gate.
  const linear_test::Weights other = linear_test::make_weights(KernelPath::kGeneric, n, 2 * k, 24);
  const AutoLinearWeights g = pack_linear_auto(linear_test::clone_storage(other.storage));
  EXPECT_EQ(g.path_reason.rfind("table gates/decode_path", 0), 0u) << g.path_reason;
}

TEST(WorkerPoolSubset, ParallelForOnUsesOnlyTheFirstWorkers) {
  WorkerPool pool(2);
  std::vector<int> by(64, -1);
  pool.parallel_for_on(
      1, 64, [&](std::int64_t t, int worker) { by[static_cast<std::size_t>(t)] = worker; });
  for (int w : by) EXPECT_EQ(w, 0);
  std::atomic<int> tasks{0};
  pool.parallel_for_on(0, 100, [&](std::int64_t, int) { tasks.fetch_add(1); });
  EXPECT_EQ(tasks.load(), 100);
}

}  // namespace
}  // namespace k3k
