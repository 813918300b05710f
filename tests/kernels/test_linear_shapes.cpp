// Linear (decode at M = 1 and K a multiple of 128, prefill otherwise, so M = 1 meets both kernels)
// on every layer (support/layer_sweep.h) at small odd shapes across the layers' row groups (M 1 to
// 17 over the 4- and 8-row groups, N over partial 32-row tiles, tile_n not a multiple of 32, C4
// padding, every epilogue) and at real model shapes (Qwen3-0.6B, Qwen3-1.7B, Qwen3.5): the same
// bits for 1 and 3 workers and for every weight packing the layer reads (kRowTile32 and its own),
// within the float64 reference's bound and within twice that bound of the generic layer.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "k3k/linear.h"
#include "k3k/quantize.h"
#include "support/layer_sweep.h"
#include "support/linear_checks.h"
#include "support/linear_packings.h"
#include "support/test_data.h"
#include "support/test_size.h"

namespace {

using k3k::KernelPath;
using k3k::OutputLayout;

struct Case {
  std::int64_t m, n, k;
  int tile_n;
  OutputLayout layout;
  bool bias, residual, clamp;
};

void check_case(KernelPath path, const Case& c, std::uint64_t seed) {
  SCOPED_TRACE(testing::Message() << "m=" << c.m << " n=" << c.n << " k=" << c.k
                                  << " tile_n=" << c.tile_n
                                  << " c4=" << (c.layout == OutputLayout::kC4) << " bias=" << c.bias
                                  << " residual=" << c.residual << " clamp=" << c.clamp);
  const k3k::W4B64Storage s = k3test::hqq_weights(c.n, c.k, seed);
  const k3k::W4B64Packed rowtile32 = k3k::pack_w4b64_generic(s);
  const auto a = k3test::normal_activations(c.m, c.k, seed + 1);
  const auto bias = k3test::normal_activations(1, c.n, seed + 2);
  const std::int64_t elems = k3k::output_elements(c.layout, c.m, c.n);
  const auto residual = k3test::normal_activations(1, elems, seed + 3);
  k3k::LinearEpilogue ep;
  ep.layout = c.layout;
  ep.bias = c.bias ? bias.data() : nullptr;
  ep.residual = c.residual ? residual.data() : nullptr;
  if (c.clamp) {
    ep.clamp_min = -0.5f;
    ep.clamp_max = 0.5f;
  }
  const bool decode = c.m == 1 && c.k % 128 == 0;  // exercise both kernels at M = 1
  auto act = k3k::make_packed_activations(
      c.m, c.k, decode ? k3k::ActivationLayout::kRowK256 : k3k::ActivationLayout::kRowsM4);
  k3k::WorkerPool pool1(1);
  if (decode)
    k3k::quantize_pack_decode(path, a.data(), act);
  else
    k3k::quantize_pack_prefill(path, a.data(), act, pool1);
  auto run = [&](KernelPath p, const k3k::W4B64Packed& w, k3k::WorkerPool& pool,
                 const k3k::LinearTiling& tiling) {
    std::vector<float> out(static_cast<std::size_t>(elems), -1.0f);
    if (decode)
      k3k::linear_decode_w4b64(p, act, w, ep, out.data(), pool, tiling);
    else
      k3k::linear_prefill_w4b64(p, act, w, ep, out.data(), pool, tiling);
    return out;
  };
  // Every worker count and weight packing gives the same bits.
  const std::vector<k3test::Packing> packings = k3test::packings_of(path, rowtile32);
  std::vector<float> first;
  for (int workers : {1, 3}) {
    k3k::WorkerPool pool(workers);
    for (const k3test::Packing& p : packings) {
      const std::vector<float> out = run(path, p.w, pool, {c.tile_n});
      if (first.empty()) {
        first = out;
      } else {
        ASSERT_EQ(0, std::memcmp(first.data(), out.data(), out.size() * sizeof(float)))
            << "output depends on the workers or the packing (workers " << workers << ", " << p.name
            << ")";
      }
    }
  }
  if (path == KernelPath::kGeneric) {
    k3test::expect_linear_within_bound(s, act, ep, c.m, c.n, first, nullptr);
  } else {
    const std::vector<float> gen = run(KernelPath::kGeneric, rowtile32, pool1, {});
    k3test::expect_linear_within_bound(s, act, ep, c.m, c.n, first, &gen);
  }
}

class LinearShapes : public k3test::OnLayer {};

TEST_P(LinearShapes, SmallShapesWithinBoundForEveryPackingAndWorkerCount) {
  std::uint64_t seed = 11;
  for (std::int64_t m : {1, 3, 4, 5, 8, 9}) {
    for (std::int64_t n : {1, 33, 100}) {
      for (std::int64_t k : {64, 256}) {
        check_case(layer(), {m, n, k, 64, OutputLayout::kRowMajor, true, false, false}, seed++);
      }
    }
  }
  check_case(layer(), {5, 37, 192, 7, OutputLayout::kC4, true, true, true}, seed++);
  check_case(layer(), {1, 37, 256, 16, OutputLayout::kC4, false, true, true}, seed++);
  check_case(layer(), {13, 64, 128, 32, OutputLayout::kRowMajor, false, true, false}, seed++);
  check_case(layer(), {17, 96, 128, 40, OutputLayout::kC4, true, true, false}, seed++);
}

TEST_P(LinearShapes, Qwen3_0_6bShapes) {
  // decode q/k/v/o class
  check_case(layer(), {1, 1024, 1024, 64, OutputLayout::kRowMajor, true, false, false}, 101);
  // prefill rows of gate/up, across 4-row (5 = 4 + 1) and 8-row (12 = 8 + 4) groups
  check_case(layer(), {5, 256, 1024, 64, OutputLayout::kC4, true, true, false}, 102);
  check_case(layer(), {12, 256, 1024, 64, OutputLayout::kC4, true, true, false}, 103);
}

// N x K shapes of Qwen3-1.7B and Qwen3.5 layers (decode and prefill; M = 16 and an odd M = 9).
// Reduced runs (support/test_size.h) keep every K and cut the prefill cases' N.
TEST_P(LinearShapes, Qwen3_1_7bAndQwen3_5Shapes) {
  check_case(layer(), {1, 2048, 2048, 64, OutputLayout::kRowMajor, true, false, false},
             111);  // 1.7B q/o decode
  check_case(layer(),
             {16, k3test::model_n(1024, 160), 2048, 64, OutputLayout::kC4, false, true, false},
             112);  // 1.7B k/v prefill
  check_case(layer(), {1, 16, 1024, 64, OutputLayout::kRowMajor, false, false, false},
             113);  // 3.5 GDN a/b decode
  check_case(layer(),
             {9, k3test::model_n(1024, 96), 3584, 128, OutputLayout::kRowMajor, true, false, false},
             114);  // 3.5-0.8B down
}

K3_SWEEP_LAYERS(LinearShapes);

}  // namespace
