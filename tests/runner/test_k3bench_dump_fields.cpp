// --dump carries what an independent check needs, recomputed here from the files and the manifest
// alone: a norm's eps, gdn_gates with a dt_bias of its own (a swap of a_log and dt_bias shows),
// kv_append's cache before and after the call (only the appended slots change), a C4 input whose
// pad lanes are 0 as its layout says, and the TCM gate's decision in params.tcm.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "k3bench_process.h"

namespace {

namespace fs = std::filesystem;

struct Dump {
  fs::path dir;
  nlohmann::json manifest, result;

  const nlohmann::json& array(const std::string& name) const {
    for (const auto& a : manifest["arrays"])
      if (a["name"] == name) return a;
    throw std::runtime_error("array " + name + " missing from the manifest");
  }
  bool has(const std::string& name) const {
    for (const auto& a : manifest["arrays"])
      if (a["name"] == name) return true;
    return false;
  }
  template <typename T>
  std::vector<T> values(const std::string& name) const {
    std::ifstream f(dir / array(name)["file"].get<std::string>(), std::ios::binary);
    std::vector<T> v(array(name)["bytes"].get<std::size_t>() / sizeof(T));
    f.read(reinterpret_cast<char*>(v.data()), static_cast<std::streamsize>(v.size() * sizeof(T)));
    return v;
  }
};

Dump run_dump(const std::string& op, const std::string& shape, const std::string& params) {
  Dump d;
  d.dir = fs::temp_directory_path() / ("k3bench_fields_" + op + "_" + std::to_string(::getpid()));
  fs::remove_all(d.dir);
  const auto r = k3test::run_k3bench("--op " + op + " --shape " + shape +
                                     (params.empty() ? "" : " --params " + params) +
                                     " --reps 1 --min-time 0.001 --json --dump " + d.dir.string());
  EXPECT_EQ(r.exit_code, 0) << r.err;
  d.result = nlohmann::json::parse(r.out);
  std::ifstream mf(d.dir / "manifest.json");
  d.manifest = nlohmann::json::parse(mf);
  return d;
}

// rmsnorm: y = x / sqrt(mean(x^2) + eps) * w, with the eps of the manifest (what the call was
// given; the gated and L2 norms state theirs the same way).
TEST(K3benchDumpFields, RmsnormRecomputesWithTheManifestsEps) {
  const Dump d = run_dump("rmsnorm", "rows=3,dim=256", "workers=1");
  ASSERT_TRUE(d.manifest["params"].contains("eps")) << d.manifest["params"];
  const double eps = d.manifest["params"]["eps"].get<double>();
  EXPECT_EQ(static_cast<float>(eps), 1e-6f);
  const auto x = d.values<float>("x"), w = d.values<float>("weight"), y = d.values<float>("output");
  ASSERT_EQ(x.size(), 3u * 256);
  double worst = 0;
  for (int r = 0; r < 3; ++r) {
    double ss = 0;
    for (int i = 0; i < 256; ++i) ss += double(x[r * 256 + i]) * x[r * 256 + i];
    const double inv = 1 / std::sqrt(ss / 256 + eps);
    for (int i = 0; i < 256; ++i) {
      const double ref = x[r * 256 + i] * inv * w[i];
      worst = std::max(worst, std::abs(ref - y[r * 256 + i]) / std::max(1e-30, std::abs(ref)));
    }
  }
  EXPECT_LT(worst, 1e-5);
  fs::remove_all(d.dir);
  for (const char* op : {"gated_rmsnorm", "l2norm"}) {
    const Dump g = run_dump(
        op, std::string(op) == "l2norm" ? "tokens=2,heads=2,dim=64" : "rows=2,dim=64", "workers=1");
    EXPECT_EQ(static_cast<float>(g.manifest["params"].value("eps", 0.0)), 1e-6f) << op;
    fs::remove_all(g.dir);
  }
}

// gdn_gates: g = -exp(a_log) * softplus(a + dt_bias), beta = sigmoid(b), from the files; dt_bias
// has values of its own, so the same formula with the two swapped does not reproduce g.
TEST(K3benchDumpFields, GdnGatesRecomputeAndASwapOfALogAndDtBiasShows) {
  const Dump d = run_dump("gdn_gates", "tokens=4,heads=16", "workers=1");
  const auto a = d.values<float>("a"), b = d.values<float>("b"), a_log = d.values<float>("a_log"),
             dt_bias = d.values<float>("dt_bias"), g = d.values<float>("g"),
             beta = d.values<float>("beta");
  ASSERT_EQ(a_log.size(), 16u);
  ASSERT_EQ(dt_bias.size(), 16u);
  EXPECT_NE(a_log, dt_bias);
  EXPECT_EQ(d.array("dt_bias")["layout"], "[heads]");
  auto softplus = [](double v) { return v > 20 ? v : std::log1p(std::exp(v)); };
  double worst = 0, worst_swapped = 0, worst_beta = 0;
  for (int t = 0; t < 4; ++t) {
    for (int h = 0; h < 16; ++h) {
      const double x = a[t * 16 + h];
      const double ref = -std::exp(double(a_log[h])) * softplus(x + dt_bias[h]);
      const double swapped = -std::exp(double(dt_bias[h])) * softplus(x + a_log[h]);
      const double scale = std::max(1e-6, std::abs(ref));
      worst = std::max(worst, std::abs(ref - g[t * 16 + h]) / scale);
      worst_swapped = std::max(worst_swapped, std::abs(swapped - g[t * 16 + h]) / scale);
      worst_beta = std::max(
          worst_beta, std::abs(1 / (1 + std::exp(-double(b[t * 16 + h]))) - beta[t * 16 + h]));
    }
  }
  EXPECT_LT(worst, 1e-4);
  EXPECT_GT(worst_swapped, 1e-2) << "a_log and dt_bias must be told apart by the dump";
  EXPECT_LT(worst_beta, 1e-6);
  fs::remove_all(d.dir);
}

// kv_append: the cache as it was before the call (every slot seeded) and after it; the call wrote
// the appended positions' V (bit-exact fp32 copies of v_new) and K, and nothing else.
TEST(K3benchDumpFields, KvAppendDumpsTheCacheBeforeAndAfterAndOnlyTheAppendedSlotsChange) {
  const int past = 5, tokens = 3, heads = 2, d = 64;
  const Dump dump = run_dump("kv_append", "tokens=3,past=5,kv_heads=2,head_dim=64", "workers=1");
  for (const char* name : {"k_cache_before", "v_cache_before", "k_cache", "v_cache"})
    ASSERT_TRUE(dump.has(name)) << name;
  EXPECT_NE(dump.array("k_cache_before")["layout"].get<std::string>().find("before the call"),
            std::string::npos);
  EXPECT_NE(dump.array("k_cache")["layout"].get<std::string>().find("after the call"),
            std::string::npos);
  const auto v0 = dump.values<float>("v_cache_before"), v1 = dump.values<float>("v_cache");
  const auto k0 = dump.values<float>("k_cache_before"), k1 = dump.values<float>("k_cache");
  const auto v_new = dump.values<float>("v_new");
  ASSERT_EQ(v0.size(), v1.size());
  ASSERT_EQ(k0.size(), k1.size());
  const std::int64_t capacity = static_cast<std::int64_t>(v0.size()) / (heads * d);
  ASSERT_EQ(capacity, past + tokens);
  // V: [kv_heads][capacity][head_dim]; the appended slots hold v_new ([tokens][kv_heads][d]).
  int v_changed = 0;
  for (int h = 0; h < heads; ++h) {
    for (std::int64_t s = 0; s < capacity; ++s) {
      for (int i = 0; i < d; ++i) {
        const std::size_t at = (h * capacity + s) * d + i;
        if (s >= past) {
          EXPECT_EQ(v1[at], v_new[((s - past) * heads + h) * d + i]) << h << " " << s << " " << i;
          v_changed += v1[at] != v0[at];
        } else {
          EXPECT_EQ(v1[at], v0[at]) << "slot " << s << " was not the call's to write";
        }
      }
    }
  }
  EXPECT_GT(v_changed, 0) << "the before holds other values than the call wrote";
  // K: [kv_heads][key_blocks][head_dim][key_block], slot s in column s % key_block.
  const auto& shape = dump.array("k_cache")["shape"];
  const std::int64_t kb = shape[3].get<std::int64_t>();
  for (int h = 0; h < heads; ++h) {
    for (std::int64_t s = 0; s < shape[1].get<std::int64_t>() * kb; ++s) {
      for (int i = 0; i < d; ++i) {
        const std::size_t at = ((h * shape[1].get<std::int64_t>() + s / kb) * d + i) * kb + s % kb;
        if (s < past || s >= past + tokens)
          EXPECT_EQ(k1[at], k0[at]) << "slot " << s << " was not the call's to write";
        else
          EXPECT_NE(k1[at], k0[at]) << "slot " << s << " is the call's";
      }
    }
  }
  fs::remove_all(dump.dir);
}

// linear_prefill with layout=c4 and a fused residual, N not a multiple of 4: the residual input's
// pad lanes are 0, as its layout string says, and so are the output's.
TEST(K3benchDumpFields, C4InputsKeepTheirPadLanesAtZeroAsTheirLayoutSays) {
  const int m = 3, n = 38;
  const Dump d = run_dump("linear_prefill", "m=3,n=38,k=128", "layout=c4,residual=1,workers=1");
  for (const char* name : {"residual", "output"}) {
    const auto& a = d.array(name);
    EXPECT_NE(a["layout"].get<std::string>().find("pad lanes 0"), std::string::npos) << a;
    const auto x = d.values<float>(name);
    ASSERT_EQ(x.size(), std::size_t((n + 3) / 4 * m * 4)) << name;
    int nonzero_data = 0;
    for (int row = 0; row < m; ++row) {
      for (int col = 0; col < (n + 3) / 4 * 4; ++col) {
        const float v = x[(std::size_t(col / 4) * m + row) * 4 + col % 4];
        if (col >= n)
          EXPECT_EQ(v, 0.0f) << name << ": pad lane of column " << col << ", row " << row;
        else
          nonzero_data += v != 0.0f;
      }
    }
    EXPECT_GT(nonzero_data, m * n / 2) << name;
  }
  fs::remove_all(d.dir);
}

// The TCM gate decides at the first call; the manifest's params are those the checked call ran
// with, so they hold the gate's decision and reason, as the result document does.
TEST(K3benchDumpFields, TheTcmGatesDecisionIsInTheManifestsParams) {
  const Dump d =
      run_dump("linear_decode", "n=256,k=2048", "workers=2,copies=1,tcm=auto,tcm_backend=emulated");
  const auto& tcm = d.manifest["params"]["tcm"];
  ASSERT_TRUE(tcm.contains("gate")) << d.manifest["params"].dump();
  EXPECT_TRUE(tcm["gate"]["use_tcm"].is_boolean());
  EXPECT_FALSE(tcm["gate"]["reason"].get<std::string>().empty());
  EXPECT_EQ(tcm["gate"], d.result["params"]["tcm"]["gate"]);
  fs::remove_all(d.dir);
}

}  // namespace
