// Generic W4B64 Linear kernels (prefill M4 and decode M1) against the float64 reference
// reference::linear_w4b64 on the same activation codes and scales, under its derived per-element
// bound. The packed weight layout is private: weights are only built through pack_w4b64_generic.
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

namespace k3k {
namespace {

std::size_t sz(std::int64_t v) { return static_cast<std::size_t>(v); }

// Largest error/bound ratio seen by any comparison in this file (reported by the tests).
double g_max_ratio = 0.0;

// Prints the largest err/bound ratio of the whole run once all tests are done.
class ReportMaxRatio : public testing::Environment {
 public:
  void TearDown() override {
    if (g_max_ratio > 0.0) std::printf("[          ] Linear max err/bound over all checks: %.4f\n", g_max_ratio);
  }
};
testing::Environment* const kReportMaxRatio = testing::AddGlobalTestEnvironment(new ReportMaxRatio);

struct Weights {
  W4B64Storage storage;
  W4B64Packed packed;
};

Weights make_weights(std::int64_t n, std::int64_t k, std::uint64_t seed) {
  const AlignedBuffer<float> w = make_synthetic_weights(n, k, {.seed = seed});
  Weights out;
  out.storage = quantize_w4b64_hqq(w.span(), n, k);
  out.packed = pack_w4b64_generic(out.storage);
  return out;
}

W4B64Storage clone_storage(const W4B64Storage& s) {
  W4B64Storage c;
  c.n = s.n;
  c.k = s.k;
  c.codes = AlignedBuffer<std::uint8_t>(s.codes.size());
  c.alpha = AlignedBuffer<float>(s.alpha.size());
  std::memcpy(c.codes.data(), s.codes.data(), s.codes.size_bytes());
  std::memcpy(c.alpha.data(), s.alpha.data(), s.alpha.size_bytes());
  return c;
}

void set_storage_code(W4B64Storage& s, std::int64_t row, std::int64_t col, int q) {
  std::uint8_t& byte = s.codes[sz(row * (s.k / 2) + col / 2)];
  byte = (col % 2 == 0) ? static_cast<std::uint8_t>((byte & 0x0F) | (q << 4))
                        : static_cast<std::uint8_t>((byte & 0xF0) | q);
}

// Activations like a transformer's hidden state: normal(0,1) with a few outlier channels.
std::vector<float> make_activations(std::int64_t m, std::int64_t k, std::uint64_t seed, double outlier = 8.0) {
  SeededRandom rng(seed);
  std::vector<float> a(sz(m * k));
  for (std::int64_t r = 0; r < m; ++r)
    for (std::int64_t i = 0; i < k; ++i)
      a[sz(r * k + i)] = static_cast<float>(rng.normal() * (i % 97 == 5 ? outlier : 1.0));
  return a;
}

std::vector<float> normal_vector(std::int64_t count, std::uint64_t seed, double sd) {
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

Acts quantize(const std::vector<float>& a, std::int64_t m, std::int64_t k, bool decode, WorkerPool& pool) {
  Acts out;
  out.m = m;
  out.k = k;
  out.pack = make_packed_activations(m, k, decode ? ActivationLayout::kRowK256 : ActivationLayout::kRowsM4);
  if (decode) {
    generic::quantize_pack_decode(a.data(), out.pack);
  } else {
    generic::quantize_pack_prefill(a.data(), out.pack, pool);
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
std::vector<float> to_layout(const float* rm, OutputLayout layout, std::int64_t m, std::int64_t n, float pad) {
  std::vector<float> v(sz(output_elements(layout, m, n)), pad);
  for (std::int64_t r = 0; r < m; ++r)
    for (std::int64_t c = 0; c < n; ++c) v[sz(output_index(layout, m, n, r, c))] = rm[r * n + c];
  return v;
}

// Runs a kernel into a NaN-filled buffer (so an unwritten element cannot pass) and returns it raw.
std::vector<float> run(const Acts& a, const W4B64Packed& w, const Epi& e, OutputLayout layout, int tile_n,
                       WorkerPool& pool) {
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
  std::vector<float> out(sz(output_elements(layout, a.m, w.n)), std::numeric_limits<float>::quiet_NaN());
  const LinearTiling tiling{tile_n};
  if (decode) {
    generic::linear_decode_w4b64(a.pack, w, ep, out.data(), pool, tiling);
  } else {
    generic::linear_prefill_w4b64(a.pack, w, ep, out.data(), pool, tiling);
  }
  return out;
}

reference::LinearResult reference_for(const Acts& a, const W4B64Storage& w, const Epi& e) {
  return reference::linear_w4b64(w, a.codes.data(), a.pack.scale.data(), a.m, e.bias, e.residual, e.clamp_min,
                                 e.clamp_max);
}

// C4 pad lanes must be exactly +0; the rest is compared with the reference under its bound.
void expect_matches(const std::vector<float>& raw, OutputLayout layout, std::int64_t m, std::int64_t n,
                    const reference::LinearResult& ref, const std::string& what) {
  ASSERT_EQ(raw.size(), sz(output_elements(layout, m, n))) << what;
  if (layout == OutputLayout::kC4) {
    for (std::int64_t r = 0; r < m; ++r) {
      for (std::int64_t c = n; c < (n + 3) / 4 * 4; ++c) {
        const float v = raw[sz(output_index(layout, m, n, r, c))];
        ASSERT_TRUE(v == 0.0f && !std::signbit(v)) << what << ": C4 pad lane (" << r << "," << c << ") = " << v;
      }
    }
  }
  const std::vector<float> got = reference::to_row_major(raw.data(), layout, m, n);
  const reference::CompareResult cmp = reference::compare_to_reference(got, ref.y, ref.bound);
  g_max_ratio = std::max(g_max_ratio, cmp.worst_ratio);
  EXPECT_TRUE(cmp.pass) << what << ": " << reference::describe(cmp, got, ref.y, ref.bound);
}

bool same_bits(const std::vector<float>& x, const std::vector<float>& y) {
  return x.size() == y.size() && std::memcmp(x.data(), y.data(), x.size() * sizeof(float)) == 0;
}

const char* layout_name(OutputLayout l) { return l == OutputLayout::kRowMajor ? "row-major" : "C4"; }

constexpr int kTiles[] = {1, 3, 16, 64};
constexpr OutputLayout kLayouts[] = {OutputLayout::kRowMajor, OutputLayout::kC4};

// Epilogue variants exercised for every shape: none, and all of bias + residual + clamp, plus one
// single-feature variant rotating with the shape index.
struct EpiData {
  std::vector<float> bias, residual;
};

std::vector<Epi> epilogue_variants(const EpiData& d, std::int64_t k, int rotate) {
  // The product term has std ~ 0.029 sqrt(K) (weights ~0.0227 rms, activations ~1.28 rms with the
  // outlier channels); bias adds 0.1 and the residual 1.0 of std. A clamp window [-sigma, 0.8 sigma]
  // of the variant's output std clamps roughly a quarter of the outputs, on both sides.
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
    case 0: single.bias = d.bias.data(); break;
    case 1: single.residual = d.residual.data(); break;
    default: window(single, single); break;
  }
  return {none, single, all};
}

int count_clamped(const reference::LinearResult& ref, const Epi& e) {
  int c = 0;
  for (double y : ref.y) c += (y == double(e.clamp_min) || y == double(e.clamp_max));
  return c;
}

// Full check of one (M, N, K) case against the reference, C4 pads, and bitwise identity across
// tile_n. To keep the sanitizer run short, the full epilogue gets every tile_n in row-major and two
// in C4; the other variants get one (rotating) tile_n per layout.
void check_case(const Acts& a, const Weights& w, int rotate, WorkerPool& pool, int* clamped) {
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
        const std::string what = std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(a.k) +
                                 " variant " + std::to_string(v) + " " + layout_name(layout) + " tile_n " +
                                 std::to_string(tile);
        const std::vector<float> out = run(a, w.packed, variants[v], layout, tile, pool);
        expect_matches(out, layout, m, n, ref, what);
        if (first.empty()) {
          first = out;
        } else {
          EXPECT_TRUE(same_bits(out, first)) << what << ": differs bitwise from tile_n " << tiles[0];
        }
      }
    }
  }
}

TEST(LinearPrefill, MatchesReferenceAcrossShapesTilesLayoutsAndEpilogues) {
  WorkerPool pool(2);
  int rotate = 0, clamped = 0;
  for (std::int64_t n : {1, 5, 16, 33, 100}) {
    for (std::int64_t k : {64, 192, 1024}) {
      const Weights w = make_weights(n, k, 10 * n + k);
      for (std::int64_t m : {1, 3, 4, 5, 17}) {
        SCOPED_TRACE(testing::Message() << "prefill M=" << m << " N=" << n << " K=" << k);
        const Acts a = quantize(make_activations(m, k, 7 * m + k), m, k, /*decode=*/false, pool);
        check_case(a, w, rotate++, pool, &clamped);
      }
    }
  }
  EXPECT_GT(clamped, 100) << "the clamp variants never clamped anything";
  std::printf("[          ] Linear max err/bound so far: %.4f\n", g_max_ratio);
}

TEST(LinearDecode, MatchesReferenceAcrossShapesTilesLayoutsAndEpilogues) {
  WorkerPool pool(2);
  int rotate = 0, clamped = 0;
  for (std::int64_t n : {1, 5, 16, 33, 100}) {
    for (std::int64_t k : {64, 192, 1024}) {
      SCOPED_TRACE(testing::Message() << "decode N=" << n << " K=" << k);
      const Weights w = make_weights(n, k, 20 * n + k);
      for (std::uint64_t seed : {1u, 2u}) {
        const Acts a = quantize(make_activations(1, k, seed * 1000 + n + k), 1, k, /*decode=*/true, pool);
        check_case(a, w, rotate++, pool, &clamped);
      }
    }
  }
  EXPECT_GT(clamped, 20) << "the clamp variants never clamped anything";
  std::printf("[          ] Linear max err/bound so far: %.4f\n", g_max_ratio);
}

// Each output's reduction order is fixed, so every worker count and tile gives the same bits.
void check_worker_invariance(bool decode, std::int64_t m, std::int64_t n, std::int64_t k) {
  const Weights w = make_weights(n, k, 77);
  WorkerPool p1(1);
  const Acts a = quantize(make_activations(m, k, 78), m, k, decode, p1);
  const std::vector<float> bias = normal_vector(n, 79, 0.1);
  const std::vector<float> residual = normal_vector(m * n, 80, 1.0);
  const Epi e{bias.data(), residual.data(), -0.2f, 0.15f};
  const reference::LinearResult ref = reference_for(a, w.storage, e);
  for (OutputLayout layout : kLayouts) {
    const std::vector<float> base = run(a, w.packed, e, layout, 16, p1);
    expect_matches(base, layout, m, n, ref, std::string("base ") + layout_name(layout));
    for (int workers : {1, 2, 3, 4}) {
      WorkerPool pool(workers);
      for (int tile : kTiles) {
        const std::vector<float> out = run(a, w.packed, e, layout, tile, pool);
        EXPECT_TRUE(same_bits(out, base)) << layout_name(layout) << " workers " << workers << " tile_n " << tile;
      }
    }
  }
}

TEST(LinearPrefill, BitwiseIdenticalAcrossWorkerCountsAndTiles) { check_worker_invariance(false, 17, 40, 320); }
TEST(LinearDecode, BitwiseIdenticalAcrossWorkerCountsAndTiles) { check_worker_invariance(true, 1, 100, 1024); }

// One real Qwen3-0.6B shape per kernel (hidden 1024, intermediate 3072), default tiling.
TEST(LinearDecode, Qwen3Sized1024x1024WithResidual) {
  const std::int64_t n = 1024, k = 1024;
  const Weights w = make_weights(n, k, 1234);
  WorkerPool pool(2), p1(1);
  const Acts a = quantize(make_activations(1, k, 4321), 1, k, true, pool);
  const std::vector<float> residual = normal_vector(n, 99, 1.0);
  const Epi e{nullptr, residual.data()};
  const reference::LinearResult ref = reference_for(a, w.storage, e);
  std::vector<float> out(sz(n)), out1(sz(n));
  LinearEpilogue ep;
  ep.residual = residual.data();
  generic::linear_decode_w4b64(a.pack, w.packed, ep, out.data(), pool);
  generic::linear_decode_w4b64(a.pack, w.packed, ep, out1.data(), p1);
  expect_matches(out, OutputLayout::kRowMajor, 1, n, ref, "decode 1024x1024");
  EXPECT_TRUE(same_bits(out, out1));
  std::printf("[          ] Linear max err/bound so far: %.4f\n", g_max_ratio);
}

TEST(LinearPrefill, Qwen3SizedM17x3072x1024) {
  const std::int64_t m = 17, n = 3072, k = 1024;
  const Weights w = make_weights(n, k, 5678);
  WorkerPool pool(2), p1(1);
  const Acts a = quantize(make_activations(m, k, 8765), m, k, false, pool);
  const reference::LinearResult ref = reference_for(a, w.storage, Epi{});
  for (OutputLayout layout : kLayouts) {
    LinearEpilogue ep;
    ep.layout = layout;
    std::vector<float> out(sz(output_elements(layout, m, n)), std::numeric_limits<float>::quiet_NaN());
    generic::linear_prefill_w4b64(a.pack, w.packed, ep, out.data(), pool);
    expect_matches(out, layout, m, n, ref, std::string("prefill 17x3072x1024 ") + layout_name(layout));
    if (layout == OutputLayout::kRowMajor) {  // one single-worker run for the bitwise check
      std::vector<float> out1(out.size(), std::numeric_limits<float>::quiet_NaN());
      generic::linear_prefill_w4b64(a.pack, w.packed, ep, out1.data(), p1);
      EXPECT_TRUE(same_bits(out, out1));
    }
  }
  std::printf("[          ] Linear max err/bound so far: %.4f\n", g_max_ratio);
}

TEST(LinearPrefill, W4A8SchemeErrorIsSmall) {
  // Kernel output vs the float64 product with UNquantised activations (same dequantised weights),
  // so the difference is the activation quantisation error (plus negligible float rounding).
  // Deterministic bound: a_k = sa x_k, and sa*qa_k differs from a_k by at most
  // sa (0.5 + 127*2^-23) + |x_k| |fl(sa) - sa| <= sa (0.5 + 2^-15), so per output
  // |err| <= sa (0.5 + 2^-15) ||w_n||_1 + (the kernel-vs-reference bound).
  // Statistical size: with errors ~ uniform(+-sa/2) the error has std sa/sqrt(12) ||w_n||_2 and y
  // has std sigma_a ||w_n||_2, a ratio absmax/(127 sqrt(12) sigma_a) ~ 3.4/440 ~ 0.8% for K=1024
  // normal activations; max|err| / max|y| over a few hundred outputs is then ~1%. A 3% ceiling
  // keeps a ~3x margin while any systematic error (wrong zero correction, wrong sa, misplaced
  // codes) produces errors comparable to |y| itself.
  const std::int64_t m = 5, n = 64, k = 1024;
  const Weights w = make_weights(n, k, 31337);
  WorkerPool pool(2);
  for (bool decode : {false, true}) {
    const std::int64_t rows = decode ? 1 : m;
    SCOPED_TRACE(decode ? "decode" : "prefill");
    const std::vector<float> act = make_activations(rows, k, 2024, /*outlier=*/1.0);
    const Acts a = quantize(act, rows, k, decode, pool);
    const std::vector<float> out = run(a, w.packed, Epi{}, OutputLayout::kRowMajor, 16, pool);
    const std::vector<double> exact = reference::linear_unquantized_activations(w.storage, act.data(), rows);
    const reference::LinearResult ref = reference_for(a, w.storage, Epi{});
    double max_err = 0.0, max_y = 0.0;
    std::vector<double> wrow(sz(k));
    for (std::int64_t c = 0; c < n; ++c) {
      dequantize_w4b64_row(w.storage, c, wrow.data());
      double l1 = 0.0;
      for (double x : wrow) l1 += std::fabs(x);
      for (std::int64_t r = 0; r < rows; ++r) {
        const double err = std::fabs(double(out[sz(r * n + c)]) - exact[sz(r * n + c)]);
        const double sa = a.pack.scale[sz(r)];
        EXPECT_LE(err, sa * (0.5 + 0x1.0p-15) * l1 + ref.bound[sz(r * n + c)]) << r << "," << c;
        max_err = std::max(max_err, err);
        max_y = std::max(max_y, std::fabs(exact[sz(r * n + c)]));
      }
    }
    EXPECT_GT(max_y, 0.1);
    EXPECT_LT(max_err, 0.03 * max_y) << "max abs err " << max_err << " vs max |y| " << max_y;
    std::printf("[          ] W4A8 %s: max abs err / max |y| = %.4f\n", decode ? "decode" : "prefill",
                max_err / max_y);
  }
}

// Extreme integer parts: every activation code at +-127 against weight codes all 0 or all 15 gives
// |qa (q - 8)| = 1016 per product, 32512 per 32-element half-block and 65024 per block, the
// largest magnitudes the integer core must hold exactly. The storage is built code by code (the
// stable MNN form) and only reaches the kernels through pack_w4b64_generic.
TEST(LinearPrefill, ExtremeCodesAreExactInBothKernels) {
  const std::int64_t n = 7, k = 256, nb = k / 64, m = 5;
  W4B64Storage st;
  st.n = n;
  st.k = k;
  st.codes = AlignedBuffer<std::uint8_t>(sz(n * k / 2));
  st.alpha = AlignedBuffer<float>(sz(n * nb * 2));
  auto code_of = [](std::int64_t row, std::int64_t col) -> int {
    switch (row) {
      case 0: return 0;
      case 1: return 15;
      case 2: return col % 2 == 0 ? 0 : 15;
      case 3: return col % 64 < 32 ? 0 : 15;
      case 4: return 8;
      case 5: return col % 64 < 32 ? 15 : 0;
      default: return static_cast<int>((col * 5 + 3) % 16);
    }
  };
  for (std::int64_t r = 0; r < n; ++r) {
    for (std::int64_t c = 0; c < k; ++c) set_storage_code(st, r, c, code_of(r, c));
    for (std::int64_t b = 0; b < nb; ++b) {
      st.alpha[sz((r * nb + b) * 2)] = 0.125f * static_cast<float>((r + b) % 5 - 2);              // beta
      st.alpha[sz((r * nb + b) * 2 + 1)] = std::ldexp(1.0f, -static_cast<int>(6 + (r + b) % 3));  // scale
    }
  }
  for (std::int64_t r = 0; r < n; ++r)
    for (std::int64_t c = 0; c < k; ++c) ASSERT_EQ(st.code(r, c), code_of(r, c));
  const W4B64Packed packed = pack_w4b64_generic(st);
  // Activation rows: all +1, all -1, alternating, +1 then -1 per half-block, and random.
  std::vector<float> act(sz(m * k));
  const std::vector<float> rnd = make_activations(1, k, 5);
  for (std::int64_t c = 0; c < k; ++c) {
    act[sz(0 * k + c)] = 1.0f;
    act[sz(1 * k + c)] = -1.0f;
    act[sz(2 * k + c)] = c % 2 == 0 ? 1.0f : -1.0f;
    act[sz(3 * k + c)] = c % 64 < 32 ? 1.0f : -1.0f;
    act[sz(4 * k + c)] = rnd[sz(c)];
  }
  WorkerPool pool(2);
  const Acts a = quantize(act, m, k, false, pool);
  for (std::int64_t c = 0; c < k; ++c) ASSERT_EQ(std::abs(a.codes[sz(c)]), 127);
  const reference::LinearResult ref = reference_for(a, st, Epi{});
  for (OutputLayout layout : kLayouts) {
    for (int tile : {1, 32, 64}) {
      expect_matches(run(a, packed, Epi{}, layout, tile, pool), layout, m, n, ref,
                     std::string("extreme prefill ") + layout_name(layout) + " tile_n " + std::to_string(tile));
    }
  }
  for (std::int64_t r = 0; r < m; ++r) {
    const std::vector<float> row(act.begin() + r * k, act.begin() + (r + 1) * k);
    const Acts d = quantize(row, 1, k, true, pool);
    const reference::LinearResult dref = reference_for(d, st, Epi{});
    expect_matches(run(d, packed, Epi{}, OutputLayout::kRowMajor, 64, pool), OutputLayout::kRowMajor, 1, n, dref,
                   "extreme decode row " + std::to_string(r));
  }
}

// Mutations: a kernel reading a wrong code/scale must be caught by the comparison.
TEST(LinearPrefill, MutatedWeightCodeIsDetectedAtItsOutputColumn) {
  const std::int64_t m = 5, n = 9, k = 192;
  const Weights w = make_weights(n, k, 4242);
  WorkerPool pool(2);
  for (bool decode : {false, true}) {
    const std::int64_t rows = decode ? 1 : m;
    std::vector<float> act = make_activations(rows, k, 17, 1.0);
    // Positions: both halves of a 64-block, even and odd elements, several blocks.
    const std::int64_t cols[] = {0, 1, 30, 31, 32, 33, 62, 63, 64 + 17, 128 + 50};
    // Large activations there make |qa| >= ~60 so the change is far above the bound.
    for (std::int64_t r = 0; r < rows; ++r)
      for (std::int64_t c : cols) act[sz(r * k + c)] = (r % 2 ? -2.5f : 2.5f);
    const Acts a = quantize(act, rows, k, decode, pool);
    const reference::LinearResult ref = reference_for(a, w.storage, Epi{});
    for (std::int64_t c : cols) {
      const std::int64_t row_w = (c * 7) % n;
      SCOPED_TRACE(testing::Message() << (decode ? "decode" : "prefill") << " weight (" << row_w << "," << c << ")");
      W4B64Storage mutated = clone_storage(w.storage);
      set_storage_code(mutated, row_w, c, mutated.code(row_w, c) ^ 0x8);  // code +- 8
      const W4B64Packed packed = pack_w4b64_generic(mutated);
      const std::vector<float> out = run(a, packed, Epi{}, OutputLayout::kRowMajor, 3, pool);
      // Against the original reference: every output of column row_w fails, nothing else does.
      for (std::int64_t r = 0; r < rows; ++r) {
        for (std::int64_t j = 0; j < n; ++j) {
          const std::size_t i = sz(r * n + j);
          const double err = std::fabs(double(out[i]) - ref.y[i]);
          if (j == row_w) {
            EXPECT_GT(err, ref.bound[i]) << "mutation not detected at output (" << r << "," << j << ")";
          } else {
            EXPECT_LE(err, ref.bound[i]) << "mutation leaked into output (" << r << "," << j << ")";
          }
        }
      }
      EXPECT_FALSE(reference::compare_to_reference(out, ref.y, ref.bound).pass);
      // Against the reference of the mutated weights: passes.
      const reference::LinearResult mref = reference_for(a, mutated, Epi{});
      expect_matches(out, OutputLayout::kRowMajor, rows, n, mref, "mutated reference");
    }
  }
}

TEST(LinearDecode, MutatedScaleOrBetaIsDetected) {
  const std::int64_t n = 8, k = 256;
  const Weights w = make_weights(n, k, 999);
  WorkerPool pool(1);
  const Acts a = quantize(make_activations(1, k, 3), 1, k, true, pool);
  const reference::LinearResult ref = reference_for(a, w.storage, Epi{});
  for (int which : {0, 1}) {  // alpha pair element: 0 = beta, 1 = scale
    W4B64Storage mutated = clone_storage(w.storage);
    const std::int64_t row = 5, block = 2, nb = k / 64;
    float& v = mutated.alpha[sz((row * nb + block) * 2 + which)];
    v = v * 1.5f + (which == 0 ? 0.01f : 0.0f);
    const reference::LinearResult mref = reference_for(a, mutated, Epi{});
    ASSERT_GT(std::fabs(mref.y[sz(row)] - ref.y[sz(row)]), 4 * ref.bound[sz(row)]) << "mutation too small to see";
    const std::vector<float> out = run(a, pack_w4b64_generic(mutated), Epi{}, OutputLayout::kRowMajor, 16, pool);
    const reference::CompareResult cmp = reference::compare_to_reference(out, ref.y, ref.bound);
    EXPECT_FALSE(cmp.pass) << (which ? "scale" : "beta");
    EXPECT_EQ(cmp.worst_index, row);
    expect_matches(out, OutputLayout::kRowMajor, 1, n, mref, which ? "scale" : "beta");
  }
}

TEST(LinearDecode, CompareFailsWhenAnOutputIsOffByTwiceItsBound) {
  // |fl(y + 2b) - y| >= 2b - u|y| > b because the bound is at least (nb + 5) u |y| >= 6 u |y|;
  // |fl(y + b/2) - y| <= b/2 + u|y| < b.
  const std::int64_t n = 33, k = 192;
  const Weights w = make_weights(n, k, 55);
  WorkerPool pool(1);
  const Acts a = quantize(make_activations(1, k, 56), 1, k, true, pool);
  const std::vector<float> bias = normal_vector(n, 57, 0.1);
  const Epi e{bias.data()};
  const reference::LinearResult ref = reference_for(a, w.storage, e);
  const std::vector<float> out = run(a, w.packed, e, OutputLayout::kRowMajor, 16, pool);
  ASSERT_TRUE(reference::compare_to_reference(out, ref.y, ref.bound).pass);
  for (std::size_t i : {std::size_t{0}, std::size_t{16}, std::size_t{32}}) {
    for (double sign : {1.0, -1.0}) {
      std::vector<float> bad = out;
      bad[i] = static_cast<float>(ref.y[i] + sign * 2.0 * ref.bound[i]);
      const reference::CompareResult cmp = reference::compare_to_reference(bad, ref.y, ref.bound);
      EXPECT_FALSE(cmp.pass) << i;
      EXPECT_EQ(cmp.worst_index, static_cast<std::int64_t>(i));
      std::vector<float> ok = out;
      ok[i] = static_cast<float>(ref.y[i] + sign * 0.5 * ref.bound[i]);
      EXPECT_TRUE(reference::compare_to_reference(ok, ref.y, ref.bound).pass) << i;
    }
  }
}

TEST(LinearPrefill, ClampWithEqualBoundsGivesThatConstant) {
  const std::int64_t m = 5, n = 7, k = 128;
  const Weights w = make_weights(n, k, 1);
  WorkerPool pool(2);
  const Acts a = quantize(make_activations(m, k, 2), m, k, false, pool);
  const Epi e{nullptr, nullptr, 0.25f, 0.25f};
  for (OutputLayout layout : kLayouts) {
    const std::vector<float> out = run(a, w.packed, e, layout, 4, pool);
    const std::vector<float> rm = reference::to_row_major(out.data(), layout, m, n);
    for (float v : rm) EXPECT_EQ(v, 0.25f);
  }
}

TEST(LinearPrefill, OutputLayoutIndexing) {
  // Row-major is [M][N]; C4 is [ceil(N/4)][M][4]: element (r, c) at ((c/4)*M + r)*4 + c%4.
  for (std::int64_t m : {1, 3, 5}) {
    for (std::int64_t n : {1, 4, 5, 9}) {
      EXPECT_EQ(output_elements(OutputLayout::kRowMajor, m, n), m * n);
      EXPECT_EQ(output_elements(OutputLayout::kC4, m, n), (n + 3) / 4 * 4 * m);
      std::vector<int> hits(sz(output_elements(OutputLayout::kC4, m, n)), 0);
      for (std::int64_t r = 0; r < m; ++r) {
        for (std::int64_t c = 0; c < n; ++c) {
          EXPECT_EQ(output_index(OutputLayout::kRowMajor, m, n, r, c), r * n + c);
          const std::int64_t i = output_index(OutputLayout::kC4, m, n, r, c);
          EXPECT_EQ(i / (4 * m), c / 4);
          EXPECT_EQ((i % (4 * m)) / 4, r);
          EXPECT_EQ(i % 4, c % 4);
          ++hits[sz(i)];
        }
      }
      for (int h : hits) EXPECT_LE(h, 1);
    }
  }
}

TEST(LinearPrefill, InvalidArgumentsThrowBeforeWriting) {
  const Weights w = make_weights(6, 128, 3);
  const Weights w64 = make_weights(6, 64, 3);
  WorkerPool pool(2);
  const Acts pre = quantize(make_activations(3, 128, 4), 3, 128, false, pool);
  const Acts pre1 = quantize(make_activations(1, 128, 4), 1, 128, false, pool);
  const Acts dec = quantize(make_activations(1, 128, 4), 1, 128, true, pool);
  std::vector<float> out(64, 7.0f);
  const LinearEpilogue ok;
  auto untouched = [&] { return std::all_of(out.begin(), out.end(), [](float v) { return v == 7.0f; }); };

  // K mismatch.
  EXPECT_THROW(generic::linear_prefill_w4b64(pre.pack, w64.packed, ok, out.data(), pool), std::invalid_argument);
  EXPECT_THROW(generic::linear_decode_w4b64(dec.pack, w64.packed, ok, out.data(), pool), std::invalid_argument);
  // Wrong activation layout.
  EXPECT_THROW(generic::linear_prefill_w4b64(dec.pack, w.packed, ok, out.data(), pool), std::invalid_argument);
  EXPECT_THROW(generic::linear_decode_w4b64(pre1.pack, w.packed, ok, out.data(), pool), std::invalid_argument);
  EXPECT_THROW(generic::linear_decode_w4b64(pre.pack, w.packed, ok, out.data(), pool), std::invalid_argument);
  // tile_n <= 0.
  for (int tile : {0, -1}) {
    EXPECT_THROW(generic::linear_prefill_w4b64(pre.pack, w.packed, ok, out.data(), pool, {tile}),
                 std::invalid_argument);
    EXPECT_THROW(generic::linear_decode_w4b64(dec.pack, w.packed, ok, out.data(), pool, {tile}),
                 std::invalid_argument);
  }
  // clamp_min > clamp_max.
  LinearEpilogue bad_clamp;
  bad_clamp.clamp_min = 1.0f;
  bad_clamp.clamp_max = -1.0f;
  EXPECT_THROW(generic::linear_prefill_w4b64(pre.pack, w.packed, bad_clamp, out.data(), pool),
               std::invalid_argument);
  EXPECT_THROW(generic::linear_decode_w4b64(dec.pack, w.packed, bad_clamp, out.data(), pool),
               std::invalid_argument);
  // Null output.
  EXPECT_THROW(generic::linear_prefill_w4b64(pre.pack, w.packed, ok, nullptr, pool), std::invalid_argument);
  EXPECT_THROW(generic::linear_decode_w4b64(dec.pack, w.packed, ok, nullptr, pool), std::invalid_argument);
  EXPECT_TRUE(untouched()) << "a rejected call wrote to the output";

  // The valid calls go through.
  EXPECT_NO_THROW(generic::linear_prefill_w4b64(pre.pack, w.packed, ok, out.data(), pool));
  EXPECT_NO_THROW(generic::linear_decode_w4b64(dec.pack, w.packed, ok, out.data(), pool));
  EXPECT_FALSE(untouched());
}

}  // namespace
}  // namespace k3k
