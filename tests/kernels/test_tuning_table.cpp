// The tuning-table loader (k3k/tuning.h): a valid table changing exactly the parameters it names,
// the knobs it accepts, and every rejection reason with its one-line message. Rules and gates for
// shapes without an entry are in test_tuning_rules.cpp; loading files and the auto entry points in
// test_tuning_table_file.cpp.
#include <gtest/gtest.h>

#include <string>

#include <nlohmann/json.hpp>

#include "k3k/linear_auto.h"
#include "k3k/tuning.h"
#include "tuning_table_support.h"

namespace k3k {
namespace {

using namespace tuning_test;

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
       "/kernel_abi: table for kernel ABI 4, this library is ABI 3"},
      {"abi before the fp16 weight pairs", [](json& t) { t["kernel_abi"] = 2; },
       "/kernel_abi: table for kernel ABI 2, this library is ABI 3"},
      {"abi before the KV key blocks", [](json& t) { t["kernel_abi"] = 1; },
       "/kernel_abi: table for kernel ABI 1, this library is ABI 3"},
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
}  // namespace
}  // namespace k3k
