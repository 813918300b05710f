// Model files as the single source of shapes: every configs/models file loads with the reference's
// numbers (weights per model, the Qwen3.5 layer pattern), its derived op cells (embedding and
// lm_head included, Gated DeltaNet ops for Qwen3.5 only) all validate against the real runner's
// catalog, one edit of a dimension changes the cells, malformed files are one line naming file,
// line and key, and the published figures file loads.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "harness/common/model/model_config.h"
#include "harness/common/model/model_shapes.h"
#include "harness/host/bench/catalog.h"
#include "harness/host/bench/grid.h"
#include "harness/host/bench/published.h"
#include "harness/host/bench/user_error.h"
#include "harness/host/targets/target.h"

namespace fs = std::filesystem;

namespace {

const std::string kModels = std::string(K3TUNE_ROOT) + "/configs/models";

k3model::ModelConfig load(const std::string& id) {
  return k3model::load_model_config(kModels + "/" + id + ".toml");
}

TEST(ModelConfig, FilesCarryTheReferenceNumbers) {
  // Body weights (projections) per model, as derived in the peer reference's section 8.1.
  const std::pair<const char*, double> body_millions[] = {{"qwen3-0.6b", 440},
                                                          {"qwen3-1.7b", 1409},
                                                          {"qwen3-4b", 3633},
                                                          {"qwen3.5-0.8b", 498},
                                                          {"qwen3.5-2b", 1373}};
  for (const auto& [id, millions] : body_millions) {
    const auto c = load(id);
    EXPECT_NEAR(c.body_params() / 1e6, millions, 1.0) << id;
    EXPECT_TRUE(c.tied_embeddings) << id;
  }
  const auto q35 = load("qwen3.5-0.8b");
  EXPECT_EQ(q35.linear_layers(), 18);
  std::vector<int> full;
  for (int i = 0; i < q35.layers; ++i)
    if (!q35.is_linear(i)) full.push_back(i);
  EXPECT_EQ(full, (std::vector<int>{3, 7, 11, 15, 19, 23}));
  EXPECT_EQ(q35.q_proj_n(), 4096);  // the output gate doubles q_proj
  EXPECT_EQ(q35.conv_dim(), 6144);
  EXPECT_EQ(load("qwen3-4b").full_layers(), 36);
}

TEST(ModelConfig, ShapeValuesRoundTrip) {
  for (const char* id : {"qwen3-1.7b", "qwen3.5-2b"}) {
    const auto c = load(id);
    const auto values = c.shape_values();
    const auto back =
        k3model::ModelConfig::from_shape_values([&](const std::string& k) { return values.at(k); });
    EXPECT_EQ(back.shape_values(), values) << id;
    EXPECT_EQ(back.body_params(), c.body_params()) << id;
  }
}

TEST(ModelConfig, DerivedCellsCoverTheForwardPass) {
  const auto q3 = k3model::derive_op_shapes(load("qwen3-0.6b"));
  const auto q35 = k3model::derive_op_shapes(load("qwen3.5-0.8b"));
  auto has = [](const std::vector<k3model::OpShape>& v, const std::string& op,
                const std::string& role) {
    for (const auto& s : v)
      if (s.op == op && s.role.find(role) != std::string::npos) return true;
    return false;
  };
  EXPECT_TRUE(has(q3, "linear_decode", "lm_head"));
  EXPECT_TRUE(has(q3, "embedding", "embed_tokens"));
  EXPECT_TRUE(has(q3, "attn_decode", "attention"));
  EXPECT_FALSE(has(q3, "gdn_decode", ""));
  for (const char* op : {"gdn_decode", "gdn_prefill", "causal_conv1d", "l2norm", "gdn_gates",
                         "gated_rmsnorm", "sigmoid_gate"})
    EXPECT_TRUE(has(q35, op, "")) << op;
  for (const auto& s : q35) {
    if (s.op == "linear_decode" && s.role.find("lm_head") != std::string::npos) {
      EXPECT_EQ(s.shape.at("n"), "248320");
    }
  }
  // One edit changes the cells: a different vocabulary changes the lm_head and embedding cells.
  auto edited = load("qwen3-0.6b");
  edited.vocab = 1000;
  const auto e = k3model::derive_op_shapes(edited);
  int changed = 0;
  for (const auto& s : e)
    if (s.shape.count("vocab") || (s.op == "linear_decode" && s.shape.at("n") == "1000")) ++changed;
  EXPECT_EQ(changed, 3);  // two embedding cells + the lm_head
}

// Every derived cell of every model validates against the catalog the real runner publishes.
TEST(ModelConfig, DerivedCellsValidateAgainstTheRunner) {
  k3targets::TargetConfig tc;
  tc.name = "local";
  tc.kind = k3targets::TargetKind::kLocal;
  tc.runner = K3BENCH_PATH;
  tc.timeout_s = 60;
  const auto target = k3targets::make_target(tc, K3TUNE_ROOT);
  const k3bench::Catalog catalog = k3bench::Catalog::from_target(*target);
  for (const auto& e : fs::directory_iterator(kModels)) {
    k3bench::GridRequest r;
    r.model = e.path().stem().string();
    k3bench::MeasureSettings settings;
    k3bench::ProcessPlan plan;
    const auto cells = k3bench::expand_grid(r, catalog, kModels, settings, plan);
    EXPECT_GT(cells.size(), 20u) << r.model;
    r.model_runs = {{64, 512}, {128}, 1, 0, {}};
    const auto runs = k3bench::expand_grid(r, catalog, kModels, settings, plan);
    ASSERT_EQ(runs.size(), 3u) << r.model;
    EXPECT_EQ(runs[0].op, "model_pp");
    EXPECT_EQ(runs[2].op, "model_tg");
    EXPECT_EQ(runs[2].role, "tg128");
    // At a depth every test starts from a filled cache (the decode's prompt), and pp+tg cells
    // are their own op.
    r.model_runs = {{512}, {128}, 1, 4096, {{512, 128}}};
    const auto deep = k3bench::expand_grid(r, catalog, kModels, settings, plan);
    ASSERT_EQ(deep.size(), 3u) << r.model;
    EXPECT_EQ(deep[0].op, "model_pp");
    EXPECT_EQ(deep[0].role, "pp512@d4096");
    EXPECT_EQ(deep[0].shape["depth"], 4096);
    EXPECT_EQ(deep[1].op, "model_tg");
    EXPECT_EQ(deep[1].role, "tg128@d4096");
    EXPECT_EQ(deep[1].shape["pp"], 4096);
    EXPECT_EQ(deep[2].op, "model_pg");
    EXPECT_EQ(deep[2].role, "pp512+tg128@d4096");
    EXPECT_EQ(deep[2].shape["tg"], 128);
    EXPECT_NE(deep[0].shape, runs[1].shape);  // pp512 at depth 4096 is another cell
  }
}

class BadModelFile : public ::testing::Test {
 protected:
  std::string write(const std::string& text) {
    path_ =
        (fs::temp_directory_path() / ("k3_model_" + std::to_string(::getpid()) + ".toml")).string();
    std::ofstream(path_) << text;
    return path_;
  }
  void TearDown() override { fs::remove(path_); }
  std::string error_of(const std::string& text) {
    try {
      k3model::load_model_config(write(text));
    } catch (const k3model::ModelConfigError& e) {
      return e.what();
    }
    return "<no error>";
  }
  std::string path_;
};

std::string good_model() {
  std::ifstream in(std::string(K3TUNE_ROOT) + "/tests/data/models/tiny-qwen3.toml");
  return std::string(std::istreambuf_iterator<char>(in), {});
}

std::string replace(std::string s, const std::string& from, const std::string& to) {
  const auto at = s.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  return s.replace(at, from.size(), to);
}

TEST_F(BadModelFile, OneLineNamingFileLineAndKey) {
  const std::string good = good_model();
  EXPECT_EQ(error_of(good), "<no error>");
  const std::string missing = error_of(replace(good, "hidden = 128\n", ""));
  EXPECT_NE(missing.find(path_ + ":3: model.hidden: missing"), std::string::npos) << missing;
  const std::string typo = error_of(replace(good, "vocab = 777", "vocab = 777\nvocabulary = 5"));
  EXPECT_NE(typo.find(":15: model.vocabulary: unknown key"), std::string::npos) << typo;
  const std::string type = error_of(replace(good, "layers = 3", "layers = \"three\""));
  EXPECT_NE(type.find(":8: model.layers: expected an integer"), std::string::npos) << type;
  // A cross-field error names the line of the key it is about.
  const std::string heads = error_of(replace(good, "kv_heads = 2", "kv_heads = 3"));
  EXPECT_NE(heads.find(":10: model.kv_heads: must divide q_heads"), std::string::npos) << heads;
  const std::string k64 = error_of(replace(good, "hidden = 128", "hidden = 100"));
  EXPECT_NE(k64.find("model.hidden: must be a positive multiple of 64"), std::string::npos) << k64;
  const std::string syntax = error_of(replace(good, "qk_norm = true", "qk_norm = "));
  EXPECT_NE(syntax.find(path_ + ":"), std::string::npos) << syntax;
  const std::string table = error_of(good + "\n[shapes]\nx = 1\n");
  EXPECT_NE(table.find("shapes: unknown table"), std::string::npos) << table;
  for (const std::string& e : {missing, typo, type, heads, k64, syntax, table})
    EXPECT_EQ(e.find('\n'), std::string::npos) << e;
}

TEST(PublishedFigures, LoadWithSources) {
  const auto figures =
      k3bench::load_published(std::string(K3TUNE_ROOT) + "/configs/published/k3.toml");
  std::set<std::string> models;
  for (const auto& f : figures) {
    models.insert(f.model);
    EXPECT_FALSE(f.source.empty());
    EXPECT_GT(f.low, 0.0);
  }
  EXPECT_EQ(models, (std::set<std::string>{"qwen3-0.6b", "qwen3-1.7b", "qwen3-4b", "qwen3.5-0.8b",
                                           "qwen3.5-2b"}));
}

// MNN's figures are those of its report as merged (alibaba/MNN 01a9ee8c5,
// docs/perf/riscv_k3_ime2_asymmetric_w4b64.md, section 1: pp512 / tg128 tok/s, written out here
// from the report), cited by that commit; figures only an earlier revision of the report carried
// (llama.cpp's, the prompt-length points) are marked, and the mark is printed with the source.
TEST(PublishedFigures, MnnFiguresAreTheMergedReportsAndEarlierOnesAreMarked) {
  const std::map<std::pair<std::string, std::string>, double> merged = {
      {{"qwen3-0.6b", "pp512"}, 381.24},   {{"qwen3-0.6b", "tg128"}, 54.49},
      {{"qwen3-1.7b", "pp512"}, 169.29},   {{"qwen3-1.7b", "tg128"}, 24.90},
      {{"qwen3.5-0.8b", "pp512"}, 127.57}, {{"qwen3.5-0.8b", "tg128"}, 33.85},
      {{"qwen3.5-2b", "pp512"}, 85.60},    {{"qwen3.5-2b", "tg128"}, 17.68}};
  std::set<std::pair<std::string, std::string>> seen;
  int earlier = 0;
  for (const auto& f :
       k3bench::load_published(std::string(K3TUNE_ROOT) + "/configs/published/k3.toml")) {
    const bool mnn_report =
        f.source.find("docs/perf/riscv_k3_ime2_asymmetric_w4b64.md") != std::string::npos;
    if (!mnn_report) {
      EXPECT_TRUE(f.earlier_revision.empty()) << f.source;
      continue;
    }
    const auto it = merged.find({f.model, f.test});
    if (f.engine == "MNN" && it != merged.end()) {
      seen.insert(it->first);
      EXPECT_DOUBLE_EQ(f.low, it->second) << f.model << " " << f.test;
      EXPECT_DOUBLE_EQ(f.high, it->second);
      EXPECT_EQ(f.source, "alibaba/MNN 01a9ee8c5, docs/perf/riscv_k3_ime2_asymmetric_w4b64.md");
      EXPECT_TRUE(f.earlier_revision.empty()) << f.model << " " << f.test;
      EXPECT_EQ(f.citation(), f.source);
      if (f.test == "tg128") {
        EXPECT_NE(f.note.find("TCM decode pipeline on"), std::string::npos);
      }
    } else {
      ++earlier;  // llama.cpp's figures and the prompt-length points: not in the merged report
      EXPECT_NE(f.earlier_revision.find("PR 4702 before its merge"), std::string::npos)
          << f.engine << " " << f.model << " " << f.test;
      EXPECT_NE(f.citation().find("[earlier revision: PR 4702"), std::string::npos) << f.citation();
    }
  }
  EXPECT_EQ(seen.size(), merged.size());
  EXPECT_EQ(earlier, 8 + 3);
}

TEST(PublishedFigures, AnEmptyEarlierRevisionIsOneLineNamingItsKey) {
  const fs::path file =
      fs::temp_directory_path() / ("k3_published_" + std::to_string(getpid()) + ".toml");
  std::ofstream(file) << "[[figure]]\nmodel = \"m\"\ntest = \"pp512\"\nengine = \"e\"\n"
                         "tokens_per_s = 1.0\nsource = \"s\"\nearlier_revision = \"\"\n";
  std::string error;
  try {
    k3bench::load_published(file.string());
  } catch (const k3bench::UserError& e) {
    error = e.what();
  }
  fs::remove(file);
  EXPECT_NE(error.find(":7: figure.earlier_revision: expected a non-empty string"),
            std::string::npos)
      << error;
}

}  // namespace
