// --dump: attention and Gated DeltaNet recomputed from the dumped files and the manifest alone, in
// float64. Attention reads the KV cache as laid out (K rotated in transposed key blocks, fp16 or
// fp32) and rotates Q itself from the manifest's RoPE; Gated DeltaNet runs the float64 recurrence
// (k3k::reference::gated_deltanet) on the dumped inputs and initial state, under its bound.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "k3bench_process.h"
#include "k3k/reference/attention.h"
#include "k3k/reference/deltanet.h"

namespace {

namespace fs = std::filesystem;

struct Dump {
  fs::path dir;
  nlohmann::json manifest;

  const nlohmann::json& array(const std::string& name) const {
    for (const auto& a : manifest["arrays"])
      if (a["name"] == name) return a;
    throw std::runtime_error("array " + name + " missing from the manifest");
  }
  std::string bytes(const std::string& name) const {
    std::ifstream f(dir / array(name)["file"].get<std::string>(), std::ios::binary);
    return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
  }
  // f32 or f16 (IEEE binary16, little-endian) as float.
  std::vector<float> floats(const std::string& name) const {
    const std::string b = bytes(name);
    const std::string dtype = array(name)["dtype"];
    std::vector<float> v;
    if (dtype == "f32") {
      v.resize(b.size() / 4);
      std::memcpy(v.data(), b.data(), v.size() * 4);
    } else {
      EXPECT_EQ(dtype, "f16") << name;
      for (std::size_t i = 0; i + 1 < b.size(); i += 2) {
        std::uint16_t h;
        std::memcpy(&h, b.data() + i, 2);
        const int sign = h >> 15, exp = (h >> 10) & 31, mant = h & 1023;
        const double mag = exp == 0 ? std::ldexp(mant, -24) : std::ldexp(1024 + mant, exp - 25);
        EXPECT_NE(exp, 31) << name << ": no inf or NaN is stored";
        v.push_back(static_cast<float>(sign ? -mag : mag));
      }
    }
    return v;
  }
};

Dump run_dump(const std::string& op, const std::string& shape, const std::string& params) {
  Dump d;
  d.dir =
      fs::temp_directory_path() / ("k3bench_recompute_" + op + "_" + std::to_string(::getpid()));
  fs::remove_all(d.dir);
  const auto r = k3test::run_k3bench("--op " + op + " --shape " + shape + " --params " + params +
                                     " --reps 1 --min-time 0.001 --json --dump " + d.dir.string());
  EXPECT_EQ(r.exit_code, 0) << r.err;
  std::ifstream mf(d.dir / "manifest.json");
  d.manifest = nlohmann::json::parse(mf);
  return d;
}

// Attention over the cache as laid out: slot p of kv head h holds K[d] at
// k_cache[h][p / kb][d][p % kb] (already rotated) and V at v_cache[h][p][d]; query t sits at
// position past + t, rotated here; causal softmax with scale 1/sqrt(head_dim). `transposed_blocks`
// misreads the key blocks on purpose, to show the comparison can fail.
std::vector<double> attention_from_dump(const Dump& d, bool transposed_blocks = false) {
  const auto& shape = d.manifest["shape"];
  const int q_heads = shape["q_heads"], kv_heads = shape["kv_heads"], hd = shape["head_dim"];
  const auto q = d.floats("q"), k = d.floats("k_cache"), v = d.floats("v_cache");
  const auto k_shape = d.array("k_cache")["shape"], v_shape = d.array("v_cache")["shape"];
  const std::int64_t blocks = k_shape[1], kb = k_shape[3], cap = v_shape[1];
  const std::int64_t tokens = static_cast<std::int64_t>(q.size()) / (q_heads * hd);
  const std::int64_t past = d.manifest["op"] == "attn_decode" ? shape["ctx"].get<std::int64_t>() - 1
                                                              : shape["past"].get<std::int64_t>();
  const k3k::RopeConfig rope{d.manifest["params"]["rotary_dim"].get<int>(),
                             shape["theta"].get<double>()};
  std::vector<double> out(q.size());
  std::vector<double> qr(static_cast<std::size_t>(hd));
  for (std::int64_t t = 0; t < tokens; ++t) {
    const std::int64_t pos = past + t;
    for (int h = 0; h < q_heads; ++h) {
      const int g = h / (q_heads / kv_heads);
      k3k::reference::rope_rotate(rope, pos, q.data() + (t * q_heads + h) * hd, hd, qr.data(),
                                  nullptr);
      std::vector<double> score(static_cast<std::size_t>(pos + 1));
      double top = -INFINITY;
      for (std::int64_t p = 0; p <= pos; ++p) {
        double s = 0;
        for (int i = 0; i < hd; ++i) {
          const std::int64_t at = transposed_blocks
                                      ? ((g * blocks + p / kb) * kb + p % kb) * hd + i
                                      : ((g * blocks + p / kb) * hd + i) * kb + p % kb;
          s += qr[static_cast<std::size_t>(i)] * k[static_cast<std::size_t>(at)];
        }
        score[static_cast<std::size_t>(p)] = s / std::sqrt(double(hd));
        top = std::max(top, score[static_cast<std::size_t>(p)]);
      }
      double sum = 0;
      for (double& s : score) sum += (s = std::exp(s - top));
      for (int i = 0; i < hd; ++i) {
        double o = 0;
        for (std::int64_t p = 0; p <= pos; ++p)
          o += score[static_cast<std::size_t>(p)] *
               v[static_cast<std::size_t>((g * cap + p) * hd + i)];
        out[static_cast<std::size_t>((t * q_heads + h) * hd + i)] = o / sum;
      }
    }
  }
  return out;
}

double worst_difference(const std::vector<float>& got, const std::vector<double>& want) {
  EXPECT_EQ(got.size(), want.size());
  double worst = 0;
  for (std::size_t i = 0; i < got.size() && i < want.size(); ++i)
    worst = std::max(worst, std::fabs(double(got[i]) - want[i]));
  return worst;
}

TEST(K3benchDumpRecompute, AttentionFromTheCacheAsLaidOut) {
  struct Case {
    const char* op;
    const char* shape;
  };
  for (const Case c :
       {Case{"attn_decode", "ctx=150,q_heads=4,kv_heads=2,head_dim=64,kv_dtype=f16"},
        Case{"attn_decode", "ctx=37,q_heads=2,kv_heads=1,head_dim=32,kv_dtype=f32"},
        Case{"attn_prefill", "seq=9,past=30,q_heads=4,kv_heads=2,head_dim=64,kv_dtype=f16"},
        Case{"attn_prefill",
             "seq=5,past=3,q_heads=2,kv_heads=2,head_dim=64,rotary_dim=32,kv_dtype=f32"}}) {
    SCOPED_TRACE(std::string(c.op) + " " + c.shape);
    const Dump d = run_dump(c.op, c.shape, "workers=2");
    const auto got = d.floats("output");
    // float32 arithmetic on exactly the stored fp16/fp32 values: far below 1e-4 for O(1) values.
    EXPECT_LT(worst_difference(got, attention_from_dump(d)), 1e-4);
    EXPECT_GT(worst_difference(got, attention_from_dump(d, true)), 1e-2);
    fs::remove_all(d.dir);
  }
}

TEST(K3benchDumpRecompute, GatedDeltaNetFromTheDumpedInputs) {
  for (const char* op : {"gdn_prefill", "gdn_decode"}) {
    SCOPED_TRACE(op);
    const bool decode = std::string(op) == "gdn_decode";
    const Dump d = run_dump(op,
                            decode ? "k_heads=2,v_heads=4,k_dim=32,v_dim=24"
                                   : "seq=21,k_heads=2,v_heads=4,k_dim=32,v_dim=24",
                            decode ? "workers=2" : "workers=2,chunk=8");
    const auto& shape = d.manifest["shape"];
    const k3k::GdnDims dims{shape["k_heads"].get<int>(), shape["v_heads"].get<int>(),
                            shape["k_dim"].get<int>(), shape["v_dim"].get<int>()};
    const auto q = d.floats("q"), k = d.floats("k"), v = d.floats("v"), g = d.floats("g"),
               beta = d.floats("beta"), state0 = d.floats("initial_state");
    const std::int64_t tokens = static_cast<std::int64_t>(g.size()) / dims.v_heads;
    const std::int64_t qk = std::int64_t(dims.k_heads) * dims.k_dim,
                       vr = std::int64_t(dims.v_heads) * dims.v_dim;
    const k3k::GdnInputs in{q.data(), qk, k.data(), qk, v.data(), vr, g.data(), beta.data()};
    ASSERT_EQ(d.manifest["path"], "generic");  // the host runner: the generic layer's bound
    const int chunk = decode ? 1 : d.manifest["params"]["chunk"].get<int>();
    const auto ref = k3k::reference::gated_deltanet(
        dims, tokens, in, state0, k3k::reference::generic_gdn_error_model(dims.k_dim, chunk));
    const auto out = d.floats("output"), state = d.floats("state");
    ASSERT_EQ(out.size(), ref.out.size());
    ASSERT_EQ(state.size(), ref.state.size());
    for (std::size_t i = 0; i < out.size(); ++i)
      ASSERT_LE(std::fabs(out[i] - ref.out[i]), ref.out_bound[i]) << "output " << i;
    for (std::size_t i = 0; i < state.size(); ++i)
      ASSERT_LE(std::fabs(state[i] - ref.state[i]), ref.state_bound[i]) << "state " << i;
    // The initial state matters: recomputed from zero, the outputs leave the bound.
    const std::vector<float> zero(state0.size(), 0.0f);
    const auto wrong = k3k::reference::gated_deltanet(
        dims, tokens, in, zero, k3k::reference::generic_gdn_error_model(dims.k_dim, chunk));
    int outside = 0;
    for (std::size_t i = 0; i < out.size(); ++i)
      outside += std::fabs(out[i] - wrong.out[i]) > ref.out_bound[i];
    EXPECT_GT(outside, 0);
    fs::remove_all(d.dir);
  }
}

}  // namespace
