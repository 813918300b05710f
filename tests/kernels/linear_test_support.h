// Shared by the swept Linear tests (test_linear_reference.cpp, test_linear_contract.cpp): weights
// packed for the layer under test as an engine loads them, activations, the kernel runner, the
// reference comparison under its bound, and the per-case checks. The packed weight layouts are
// private: weights are only built through pack_w4b64_generic and k3k::pack_w4b64_for.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "k3k/linear.h"
#include "k3k/quantize.h"
#include "k3k/reference/compare.h"
#include "k3k/reference/linear.h"
#include "k3k/rounding.h"
#include "k3k/seeded_random.h"
#include "k3k/w4b64.h"
#include "k3k/worker_pool.h"
#include "support/linear_packings.h"

namespace k3k::linear_test {

inline std::size_t sz(std::int64_t v) {
  return static_cast<std::size_t>(v);
}

// Largest error/bound ratio seen by any comparison of the Linear tests (reported by them).
inline double g_max_ratio = 0.0;

struct Weights {
  W4B64Storage storage;
  W4B64Packed packed;  // for the layer under test (its default load-time packing)
};

// The storage form packed for `path` as an engine loads it.
inline W4B64Packed pack_for(KernelPath path, const W4B64Storage& storage) {
  return pack_w4b64_for(path, pack_w4b64_generic(storage));
}

inline Weights make_weights(KernelPath path, std::int64_t n, std::int64_t k, std::uint64_t seed) {
  const AlignedBuffer<float> w = make_synthetic_weights(n, k, {.seed = seed});
  Weights out;
  out.storage = quantize_w4b64_hqq(w.span(), n, k);
  out.packed = pack_for(path, out.storage);
  return out;
}

inline void set_storage_code(W4B64Storage& s, std::int64_t row, std::int64_t col, int q) {
  std::uint8_t& byte = s.codes[sz(row * (s.k / 2) + col / 2)];
  byte = (col % 2 == 0) ? static_cast<std::uint8_t>((byte & 0x0F) | (q << 4))
                        : static_cast<std::uint8_t>((byte & 0xF0) | q);
}

// Activations like a transformer's hidden state: normal(0,1) with a few outlier channels.
inline std::vector<float> make_activations(std::int64_t m, std::int64_t k, std::uint64_t seed,
                                           double outlier = 8.0) {
  SeededRandom rng(seed);
  std::vector<float> a(sz(m * k));
  for (std::int64_t r = 0; r < m; ++r)
    for (std::int64_t i = 0; i < k; ++i)
      a[sz(r * k + i)] = static_cast<float>(rng.normal() * (i % 97 == 5 ? outlier : 1.0));
  return a;
}

inline std::vector<float> normal_vector(std::int64_t count, std::uint64_t seed, double sd) {
  SeededRandom rng(seed);
  std::vector<float> v(sz(count));
  for (float& x : v) x = static_cast<float>(rng.normal(0.0, sd));
  return v;
}

// Activation pack + the layout-independent view the reference needs.
struct Acts {
  std::int64_t m = 0, k = 0;
  PackedActivations pack;
  std::vector<std::int8_t> codes;  // [M][K]
};

inline Acts quantize(KernelPath path, const std::vector<float>& a, std::int64_t m, std::int64_t k,
                     bool decode, WorkerPool& pool) {
  Acts out;
  out.m = m;
  out.k = k;
  out.pack = make_packed_activations(
      m, k, decode ? ActivationLayout::kRowK256 : ActivationLayout::kRowsM4);
  if (decode) {
    k3k::quantize_pack_decode(path, a.data(), out.pack);
  } else {
    k3k::quantize_pack_prefill(path, a.data(), out.pack, pool);
  }
  out.codes = reference::unpack_codes(out.pack);
  return out;
}

// Epilogue inputs, row-major where they are matrices.
struct Epi {
  const float* bias = nullptr;
  const float* residual = nullptr;  // row-major [M][N]
  float clamp_min = -std::numeric_limits<float>::infinity();
  float clamp_max = std::numeric_limits<float>::infinity();
};

// Row-major [M][N] -> `layout`; C4 pad lanes get `pad` (the kernel must never read them).
inline std::vector<float> to_layout(const float* rm, OutputLayout layout, std::int64_t m,
                                    std::int64_t n, float pad) {
  std::vector<float> v(sz(output_elements(layout, m, n)), pad);
  for (std::int64_t r = 0; r < m; ++r)
    for (std::int64_t c = 0; c < n; ++c) v[sz(output_index(layout, m, n, r, c))] = rm[r * n + c];
  return v;
}

// Runs a kernel into a NaN-filled buffer (so an unwritten element cannot pass) and returns it raw.
inline std::vector<float> run(KernelPath path, const Acts& a, const W4B64Packed& w, const Epi& e,
                              OutputLayout layout, int tile_n, WorkerPool& pool) {
  const bool decode = a.pack.layout == ActivationLayout::kRowK256;
  std::vector<float> residual_l;
  LinearEpilogue ep;
  ep.bias = e.bias;
  if (e.residual != nullptr) {
    residual_l = to_layout(e.residual, layout, a.m, w.n, 1.0e30f);
    ep.residual = residual_l.data();
  }
  ep.clamp_min = e.clamp_min;
  ep.clamp_max = e.clamp_max;
  ep.layout = layout;
  std::vector<float> out(sz(output_elements(layout, a.m, w.n)),
                         std::numeric_limits<float>::quiet_NaN());
  const LinearTiling tiling{tile_n};
  if (decode) {
    k3k::linear_decode_w4b64(path, a.pack, w, ep, out.data(), pool, tiling);
  } else {
    k3k::linear_prefill_w4b64(path, a.pack, w, ep, out.data(), pool, tiling);
  }
  return out;
}

inline reference::LinearResult reference_for(const Acts& a, const W4B64Storage& w, const Epi& e) {
  return reference::linear_w4b64(w, a.codes.data(), a.pack.scale.data(), a.m, e.bias, e.residual,
                                 e.clamp_min, e.clamp_max);
}

// C4 pad lanes must be exactly +0; the rest is compared with the reference under its bound.
inline void expect_matches(const std::vector<float>& raw, OutputLayout layout, std::int64_t m,
                           std::int64_t n, const reference::LinearResult& ref,
                           const std::string& what) {
  ASSERT_EQ(raw.size(), sz(output_elements(layout, m, n))) << what;
  if (layout == OutputLayout::kC4) {
    for (std::int64_t r = 0; r < m; ++r) {
      for (std::int64_t c = n; c < (n + 3) / 4 * 4; ++c) {
        const float v = raw[sz(output_index(layout, m, n, r, c))];
        ASSERT_TRUE(v == 0.0f && !std::signbit(v))
            << what << ": C4 pad lane (" << r << "," << c << ") = " << v;
      }
    }
  }
  const std::vector<float> got = reference::to_row_major(raw.data(), layout, m, n);
  const reference::CompareResult cmp = reference::compare_to_reference(got, ref.y, ref.bound);
  g_max_ratio = std::max(g_max_ratio, cmp.worst_ratio);
  EXPECT_TRUE(cmp.pass) << what << ": " << reference::describe(cmp, got, ref.y, ref.bound);
}

inline bool same_bits(const std::vector<float>& x, const std::vector<float>& y) {
  return x.size() == y.size() && std::memcmp(x.data(), y.data(), x.size() * sizeof(float)) == 0;
}

inline const char* layout_name(OutputLayout l) {
  return l == OutputLayout::kRowMajor ? "row-major" : "C4";
}

constexpr int kTiles[] = {1, 3, 16, 64};
constexpr OutputLayout kLayouts[] = {OutputLayout::kRowMajor, OutputLayout::kC4};

// Epilogue variants exercised for every shape: none, and all of bias + residual + clamp, plus one
// single-feature variant rotating with the shape index.
struct EpiData {
  std::vector<float> bias, residual;
};

inline std::vector<Epi> epilogue_variants(const EpiData& d, std::int64_t k, int rotate) {
  // The product term has std ~ 0.029 sqrt(K) (weights ~0.0227 rms, activations ~1.28 rms with the
  // outlier channels); bias adds 0.1 and the residual 1.0 of std. A clamp window [-sigma, 0.8
  // sigma] of the variant's output std clamps roughly a quarter of the outputs, on both sides.
  const double product_var = 0.029 * 0.029 * double(k);
  auto window = [&](const Epi& e, Epi& out) {
    double var = product_var;
    if (e.bias != nullptr) var += 0.01;
    if (e.residual != nullptr) var += 1.0;
    out.clamp_min = static_cast<float>(-std::sqrt(var));
    out.clamp_max = static_cast<float>(0.8 * std::sqrt(var));
  };
  const Epi none;
  Epi all{d.bias.data(), d.residual.data()};
  window(all, all);
  Epi single;
  switch (rotate % 3) {
    case 0:
      single.bias = d.bias.data();
      break;
    case 1:
      single.residual = d.residual.data();
      break;
    default:
      window(single, single);
      break;
  }
  return {none, single, all};
}

inline int count_clamped(const reference::LinearResult& ref, const Epi& e) {
  int c = 0;
  for (double y : ref.y) c += (y == double(e.clamp_min) || y == double(e.clamp_max));
  return c;
}

// Full check of one (M, N, K) case against the reference, C4 pads, and bitwise identity across
// tile_n. To keep the sanitizer run short, the full epilogue gets every tile_n in row-major and two
// in C4; the other variants get one (rotating) tile_n per layout.
inline void check_case(KernelPath path, const Acts& a, const Weights& w, int rotate,
                       WorkerPool& pool, int* clamped) {
  const std::int64_t m = a.m, n = w.storage.n;
  EpiData d{normal_vector(n, 500 + n, 0.1), normal_vector(m * n, 600 + m * n, 1.0)};
  const std::vector<Epi> variants = epilogue_variants(d, a.k, rotate);
  const int t1 = kTiles[rotate % 4], t2 = kTiles[(rotate + 1) % 4], t3 = kTiles[(rotate + 2) % 4];
  for (std::size_t v = 0; v < variants.size(); ++v) {
    const reference::LinearResult ref = reference_for(a, w.storage, variants[v]);
    *clamped += count_clamped(ref, variants[v]);
    const bool full = v + 1 == variants.size();
    for (OutputLayout layout : kLayouts) {
      std::vector<int> tiles;
      if (full && layout == OutputLayout::kRowMajor) {
        tiles.assign(std::begin(kTiles), std::end(kTiles));
      } else if (full) {
        tiles = {t1, t3};
      } else {
        tiles = {(v == 0) == (layout == OutputLayout::kRowMajor) ? t1 : t2};
      }
      std::vector<float> first;
      for (int tile : tiles) {
        const std::string what = std::to_string(m) + "x" + std::to_string(n) + "x" +
                                 std::to_string(a.k) + " variant " + std::to_string(v) + " " +
                                 layout_name(layout) + " tile_n " + std::to_string(tile);
        const std::vector<float> out = run(path, a, w.packed, variants[v], layout, tile, pool);
        expect_matches(out, layout, m, n, ref, what);
        if (first.empty()) {
          first = out;
        } else {
          EXPECT_TRUE(same_bits(out, first))
              << what << ": differs bitwise from tile_n " << tiles[0];
        }
      }
    }
  }
}

// Each output's reduction order is fixed, so every worker count and tile gives the same bits.
inline void check_worker_invariance(KernelPath path, bool decode, std::int64_t m, std::int64_t n,
                                    std::int64_t k) {
  const Weights w = make_weights(path, n, k, 77);
  WorkerPool p1(1);
  const Acts a = quantize(path, make_activations(m, k, 78), m, k, decode, p1);
  const std::vector<float> bias = normal_vector(n, 79, 0.1);
  const std::vector<float> residual = normal_vector(m * n, 80, 1.0);
  const Epi e{bias.data(), residual.data(), -0.2f, 0.15f};
  const reference::LinearResult ref = reference_for(a, w.storage, e);
  for (OutputLayout layout : kLayouts) {
    const std::vector<float> base = run(path, a, w.packed, e, layout, 16, p1);
    expect_matches(base, layout, m, n, ref, std::string("base ") + layout_name(layout));
    for (int workers : {1, 2, 3, 4}) {
      WorkerPool pool(workers);
      for (int tile : kTiles) {
        const std::vector<float> out = run(path, a, w.packed, e, layout, tile, pool);
        EXPECT_TRUE(same_bits(out, base))
            << layout_name(layout) << " workers " << workers << " tile_n " << tile;
      }
    }
  }
}

}  // namespace k3k::linear_test
