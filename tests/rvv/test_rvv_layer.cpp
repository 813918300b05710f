// The RVV layer as dispatch and the error models see it: the vector unit is detected and the
// layer chosen (qemu runs with V), and the reduction depth the RVV error models assume follows the
// kernels' reduction structure at each VLEN.
#include <gtest/gtest.h>

#include <cstdio>
#include <stdexcept>

#include "k3k/cpu.h"
#include "k3k/dispatch.h"
#include "k3k/reference/attention.h"

namespace {

using namespace k3k;
namespace ref = k3k::reference;

TEST(RvvDispatch, VectorUnitDetected) {
  ASSERT_TRUE(cpu_features().vector) << "qemu must run with v=true";
  EXPECT_GE(cpu_features().vlenb, 16);
#if defined(K3_HAVE_IME2)
  // IME2 builds pick ime2 where it runs (VLEN 1024); Ime2Dispatch.* covers that case.
  if (path_compiled(KernelPath::kIme2) && decide_path().path == KernelPath::kIme2) return;
#endif
  EXPECT_EQ(decide_path().path, KernelPath::kRvv);
  EXPECT_THROW(decide_path(KernelPath::kIme2), std::invalid_argument);
  std::printf("vlenb = %d\n", cpu_features().vlenb);
}

TEST(RvvAttentionModel, DotDepthFollowsTheReductionStructure) {
  // ceil(n / vlenb) e32m4 lane steps + 2 folds + vlenb / 4 m1 lanes in the vfredusum tree.
  EXPECT_EQ(ref::rvv_dot_depth(128, 32), 4 + 2 + 8);    // VLEN 256
  EXPECT_EQ(ref::rvv_dot_depth(128, 128), 1 + 2 + 32);  // VLEN 1024
  EXPECT_EQ(ref::rvv_dot_depth(256, 16), 16 + 2 + 4);   // VLEN 128
  EXPECT_THROW(ref::rvv_dot_depth(128, 24), std::invalid_argument);
  const int vlenb = cpu_features().vlenb;
  std::printf("[ stats    ] vlenb %d: rvv dot depth (hd 128) %lld vs generic %lld\n", vlenb,
              static_cast<long long>(ref::rvv_dot_depth(128, vlenb)),
              static_cast<long long>(ref::generic_prefill_error_model(128, {}).dot_depth));
}

TEST(RvvAttentionModel, ScoreDepthIsChainsOfSixteenDims) {
  // Scores over key blocks (rvv/key_scores.h): a 16-dim fma chain + the in-order additions of the
  // ceil(head_dim / 16) block sums, the same at every VLEN.
  EXPECT_EQ(ref::rvv_score_depth(128), 16 + 7);
  EXPECT_EQ(ref::rvv_score_depth(256), 16 + 15);
  EXPECT_EQ(ref::rvv_score_depth(72), 16 + 4);
  EXPECT_EQ(ref::rvv_score_depth(5), 5);
  EXPECT_EQ(ref::rvv_prefill_error_model(128, {16, 48}).block, 48);
  EXPECT_EQ(ref::rvv_decode_error_model(256, {100}).dot_depth, 16 + 15);
  EXPECT_THROW(ref::rvv_score_depth(0), std::invalid_argument);
}

}  // namespace
