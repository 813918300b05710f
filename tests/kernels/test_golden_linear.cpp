// Golden outputs of the quantise + pack, Linear (prefill, decode, the TCM decode pipeline, the IME2
// `.hp` decode) and embedding ops on every usable layer: one hash per case, the same for 1, 2 and 3
// workers and every tile_n, equal to the committed value (tests/support/golden.h).
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "k3k/attention.h"
#include "k3k/embedding.h"
#include "k3k/kv_cache.h"
#include "k3k/linear.h"
#include "k3k/quantize.h"
#include "k3k/small_ops.h"
#include "k3k/tcm_linear.h"
#include "kernels/golden_cases.h"
#if defined(K3_HAVE_IME2)
#include "k3k/ime2.h"
#endif
#include "support/test_data.h"
#include "tcm/tcm_test_support.h"

namespace k3test::golden {
namespace {

using namespace k3k;

// Rows with a wide range of magnitudes, a zero row and a row below 127/FLT_MAX (the 2^64 prescale).
std::vector<float> activation_rows(std::int64_t m, std::int64_t k, std::uint64_t seed) {
  std::vector<float> a = normal_floats(static_cast<std::size_t>(m * k), seed);
  for (std::int64_t r = 0; r < m; ++r) {
    const float mul = r == 1   ? 0.0f
                      : r == 2 ? 1e-38f
                               : std::ldexp(1.0f, static_cast<int>(r % 5) * 3 - 4);
    for (std::int64_t i = 0; i < k; ++i) a[static_cast<std::size_t>(r * k + i)] *= mul;
  }
  return a;
}

std::uint64_t hash_pack(const PackedActivations& p) {
  std::uint64_t h = fnv1a(p.codes.data(), p.codes.size_bytes());
  h = fnv1a(p.scale.data(), p.scale.size_bytes(), h);
  return fnv1a(p.block_sum.data(), p.block_sum.size_bytes(), h);
}

W4B64Packed weights(std::int64_t n, std::int64_t k, std::uint64_t seed, bool hp_scales = false) {
  SeededRandom rng(seed);
  const W4B64Storage s = random_code_storage(n, k, rng, [&](std::size_t i) {
    if (i % 2 == 0) return static_cast<float>(rng.normal() * 0.01);                        // beta
    return static_cast<float>(hp_scales ? rng.uniform(1e-3, 0.05) : rng.normal() * 0.01);  // scale
  });
  return pack_w4b64_generic(s);
}

// The weight layouts a layer accepts: the IME2 layer runs both (kIme2 is its own order).
std::vector<std::pair<std::string, W4B64Packed>> layouts_for(KernelPath path, W4B64Packed w) {
  std::vector<std::pair<std::string, W4B64Packed>> v;
#if defined(K3_HAVE_IME2)
  if (path == KernelPath::kIme2) v.emplace_back("w=ime2", ime2::pack_w4b64(w));
#endif
  (void)path;
  v.emplace_back("w=rowtile32", std::move(w));
  return v;
}

struct Epilogue {
  std::string name;
  std::vector<float> bias, residual;
  LinearEpilogue ep;
};

std::vector<Epilogue> epilogues(std::int64_t m, std::int64_t n, std::uint64_t seed) {
  std::vector<Epilogue> v(3);
  v[0].name = "plain";
  v[1].name = "c4-bias-residual-clamp";
  v[1].ep.layout = OutputLayout::kC4;
  v[1].bias = normal_floats(static_cast<std::size_t>(n), seed);
  v[1].residual =
      normal_floats(static_cast<std::size_t>(output_elements(OutputLayout::kC4, m, n)), seed + 1);
  v[1].ep.clamp_min = -0.75f;
  v[1].ep.clamp_max = 1.5f;
  v[2].name = "rowmajor-bias-residual";
  v[2].bias = normal_floats(static_cast<std::size_t>(n), seed + 2);
  v[2].residual = normal_floats(static_cast<std::size_t>(m * n), seed + 3);
  for (Epilogue& e : v) {
    e.ep.bias = e.bias.empty() ? nullptr : e.bias.data();
    e.ep.residual = e.residual.empty() ? nullptr : e.residual.data();
  }
  return v;
}

std::string shape(std::int64_t m, std::int64_t n, std::int64_t k) {
  std::string s = "m";
  s += std::to_string(m);
  s += "n";
  s += std::to_string(n);
  s += "k";
  s += std::to_string(k);
  return s;
}

TEST(GoldenOutputs, QuantizePack) {
  for (KernelPath path : usable_layers()) {
    for (std::int64_t m : {1, 7}) {
      const std::int64_t k = 320;
      const std::vector<float> a = activation_rows(m, k, 10 + m);
      check_all_pools(path, "quantize_pack_prefill-" + shape(m, 0, k), [&](WorkerPool& pool) {
        PackedActivations p = make_packed_activations(m, k, ActivationLayout::kRowsM4);
        k3k::quantize_pack_prefill(path, a.data(), p, pool);
        return hash_pack(p);
      });
    }
    for (std::int64_t k : {64, 512, 576}) {
      const std::vector<float> a = normal_floats(static_cast<std::size_t>(k), 20 + k, 3.0);
      check_all_pools(path, "quantize_pack_decode-k" + std::to_string(k), [&](WorkerPool&) {
        PackedActivations p = make_packed_activations(1, k, ActivationLayout::kRowK256);
        k3k::quantize_pack_decode(path, a.data(), p);
        return hash_pack(p);
      });
    }
  }
}

TEST(GoldenOutputs, LinearPrefill) {
  struct Shape {
    std::int64_t m, n, k;
  };
  for (KernelPath path : usable_layers()) {
    for (const Shape s : {Shape{9, 80, 320}, Shape{4, 64, 128}, Shape{13, 40, 64}}) {
      PackedActivations act = make_packed_activations(s.m, s.k, ActivationLayout::kRowsM4);
      const std::vector<float> a = activation_rows(s.m, s.k, 30 + s.m);
      k3k::quantize_pack_prefill(KernelPath::kGeneric, a.data(), act, *pools()[0]);
      for (const auto& layout : layouts_for(path, weights(s.n, s.k, 40 + s.n))) {
        const std::string& wname = layout.first;
        const W4B64Packed& w = layout.second;
        for (const Epilogue& e : epilogues(s.m, s.n, 50)) {
          const std::string name =
              "linear_prefill-" + shape(s.m, s.n, s.k) + "-" + wname + "-" + e.name;
          for (int tile_n : {32, 64, 48}) {
            check_all_pools(path, name, [&](WorkerPool& pool) {
              std::vector<float> out(
                  static_cast<std::size_t>(output_elements(e.ep.layout, s.m, s.n)), -9.0f);
              k3k::linear_prefill_w4b64(path, act, w, e.ep, out.data(), pool, {tile_n});
              return hash_of(out);
            });
          }
        }
      }
    }
  }
}

TEST(GoldenOutputs, LinearDecodeAndTcmPipeline) {
  auto tcm = tcm::make_emulated({});
  for (KernelPath path : usable_layers()) {
    for (const auto& nk : {std::pair<std::int64_t, std::int64_t>{80, 512}, {200, 2048}, {32, 64}}) {
      const std::int64_t n = nk.first, k = nk.second;
      PackedActivations act = make_packed_activations(1, k, ActivationLayout::kRowK256);
      const std::vector<float> a = normal_floats(static_cast<std::size_t>(k), 60 + n);
      k3k::quantize_pack_decode(KernelPath::kGeneric, a.data(), act);
      for (const auto& layout : layouts_for(path, weights(n, k, 70 + n))) {
        const std::string& wname = layout.first;
        const W4B64Packed& w = layout.second;
        for (const Epilogue& e : epilogues(1, n, 80)) {
          const std::string name = "linear_decode-" + shape(1, n, k) + "-" + wname + "-" + e.name;
          const std::size_t count = static_cast<std::size_t>(output_elements(e.ep.layout, 1, n));
          for (int tile_n : {32, 64, 96}) {
            check_all_pools(path, name, [&](WorkerPool& pool) {
              std::vector<float> out(count, -9.0f);
              k3k::linear_decode_w4b64(path, act, w, e.ep, out.data(), pool, {tile_n});
              return hash_of(out);
            });
          }
          // The TCM pipeline (emulated blocks) computes the same bytes from slabs in TCM.
          for (int slab_rows : {0, 32, 64}) {
            for (bool pairing : {true, false}) {
              check_all_pools(path, "tcm_" + name, [&](WorkerPool& pool) {
                TcmWorkspace ws(*tcm, pool);
                TcmDecodeParams p;
                p.use = TcmUse::kOn;
                p.compute_workers = pool.size();
                p.slab_rows = slab_rows;
                p.pairing = pairing;
                std::vector<float> out(count, -9.0f);
                const tcm_test::TcmDecodeResult r =
                    tcm_test::decode_with_tcm(path, act, w, e.ep, out.data(), pool, &ws, p);
                EXPECT_EQ(r.gate.use_tcm, pool.size() >= 2) << r.gate.reason;
                return hash_of(out);
              });
            }
          }
        }
      }
    }
  }
}

#if defined(K3_HAVE_IME2)
TEST(GoldenOutputs, Ime2HpDecode) {
  if (ime2::unusable_because()) GTEST_SKIP() << *ime2::unusable_because();
  for (const auto& nk : {std::pair<std::int64_t, std::int64_t>{96, 512}, {72, 2048}}) {
    const std::int64_t n = nk.first, k = nk.second;
    PackedActivations act = make_packed_activations(1, k, ActivationLayout::kRowK256);
    const std::vector<float> a = normal_floats(static_cast<std::size_t>(k), 90 + n);
    k3k::quantize_pack_decode(KernelPath::kGeneric, a.data(), act);
    const W4B64Packed w = ime2::pack_w4b64(weights(n, k, 95 + n, /*hp_scales=*/true));
    for (const Epilogue& e : epilogues(1, n, 99)) {
      const std::size_t count = static_cast<std::size_t>(output_elements(e.ep.layout, 1, n));
      for (int tile_n : {32, 64}) {
        check_all_pools(KernelPath::kIme2, "linear_decode_hp-" + shape(1, n, k) + "-" + e.name,
                        [&](WorkerPool& pool) {
                          std::vector<float> out(count, -9.0f);
                          k3k::linear_decode_w4b64(k3k::KernelPath::kIme2, act, w, e.ep, out.data(), pool, {tile_n},
                                                    k3k::LinearDecodeOptions{k3k::Accumulation::kFp16BlockScale});
                          return hash_of(out);
                        });
      }
    }
  }
}
#endif

TEST(GoldenOutputs, Embedding) {
  for (KernelPath path : usable_layers()) {
    const W4B64Packed table = weights(50, 256, 110);
    const std::vector<std::int32_t> tokens = {0, 49, 7, 7, 23, 1, 48};
    check_all_pools(path, "embedding-n50k256-t7", [&](WorkerPool& pool) {
      std::vector<float> out(tokens.size() * 256, -9.0f);
      k3k::embedding_lookup_w4b64(path, table, tokens.data(),
                                  static_cast<std::int64_t>(tokens.size()), out.data(), pool);
      return hash_of(out);
    });
  }
}

}  // namespace
}  // namespace k3test::golden
