// The emulation's IME2 instruction counters (k3k/ime2.h) against the instruction counts the shapes
// imply: decode issues 2 vmadotu per (8-row weight slice, 64-block) -- both activation halves in
// one instruction -- and prefill 2 vmadotu + 2 vmadotsu per (8 activation rows, 8-row slice,
// block). Also: the model's code range, which the qemu instruction counter skips, holds the model.
#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "ime2/ime2_model.h"
#include "k3k/ime2.h"
#include "k3k/linear.h"
#include "k3k/quantize.h"
#include "k3k/seeded_random.h"
#include "k3k/w4b64.h"
#include "support/test_data.h"

namespace {

using namespace k3k;

std::map<std::string, std::uint64_t> counts() {
  std::map<std::string, std::uint64_t> m;
  for (const auto& c : ime2::emulated_instruction_counts()) m[c.instruction] = c.count;
  return m;
}

struct Case {
  std::int64_t m, n, k;
  bool decode;
};

std::map<std::string, std::uint64_t> count_one_call(const Case& c, int workers) {
  const auto w = make_synthetic_weights(c.n, c.k, {.seed = 5});
  const W4B64Packed packed =
      ime2::pack_w4b64(pack_w4b64_generic(quantize_w4b64_hqq(w.span(), c.n, c.k, 4)));
  std::vector<float> a(static_cast<std::size_t>(c.m * c.k));
  SeededRandom rng(6);
  for (auto& x : a) x = static_cast<float>(rng.normal());
  WorkerPool pool(workers);
  auto act = make_packed_activations(
      c.m, c.k, c.decode ? ActivationLayout::kRowK256 : ActivationLayout::kRowsM4);
  if (c.decode)
    quantize_pack_decode(KernelPath::kGeneric, a.data(), act);
  else
    quantize_pack_prefill(KernelPath::kGeneric, a.data(), act, pool);
  std::vector<float> out(static_cast<std::size_t>(c.m * c.n));
  ime2::reset_emulated_instruction_counts();
  if (c.decode)
    linear_decode_w4b64(KernelPath::kIme2, act, packed, {}, out.data(), pool, {});
  else
    linear_prefill_w4b64(KernelPath::kIme2, act, packed, {}, out.data(), pool, {});
  return counts();
}

TEST(Ime2Counts, DecodeIssuesTwoVmadotPerSliceAndBlock) {
  if (!ime2::emulated() || ime2::unusable_because())
    GTEST_SKIP() << "counts exist in emulation builds at VLEN 1024";
  for (const Case c : {Case{1, 64, 128, true}, Case{1, 96, 320, true}}) {
    for (int workers : {1, 3}) {
      const auto got = count_one_call(c, workers);
      const std::uint64_t slices = static_cast<std::uint64_t>((c.n + 31) / 32 * 4),
                          blocks = c.k / 64;
      EXPECT_EQ(got, (std::map<std::string, std::uint64_t>{{"vmadotu i4", 2 * slices * blocks}}))
          << "n " << c.n << " k " << c.k << " workers " << workers;
      // Every emulated instruction was reached through one call (jal, or auipc + jalr).
      const std::uint64_t calls = ime2::emulation_call_instructions();
      EXPECT_TRUE(calls == 2 * slices * blocks || calls == 4 * slices * blocks) << calls;
    }
  }
}

TEST(Ime2Counts, PrefillIssuesFourVmadotPerTileAndBlock) {
  if (!ime2::emulated() || ime2::unusable_because())
    GTEST_SKIP() << "counts exist in emulation builds at VLEN 1024";
  const Case c{11, 64, 192, false};  // two 8-row activation groups, the second partly padding
  const auto got = count_one_call(c, 2);
  const std::uint64_t tiles = 2 * (c.n / 32) * 4, blocks = c.k / 64;
  EXPECT_EQ(got, (std::map<std::string, std::uint64_t>{{"vmadotsu i4", 2 * tiles * blocks},
                                                       {"vmadotu i4", 2 * tiles * blocks}}));
}

TEST(Ime2Counts, ResetClearsAndNamesFollowTheEncoding) {
  if (!ime2::emulated()) GTEST_SKIP() << "emulation builds only";
  ime2::reset_emulated_instruction_counts();
  EXPECT_TRUE(ime2::emulated_instruction_counts().empty());
  std::uint8_t c[256] = {}, a[256] = {}, b[128] = {};
  ime2::model::vmadot(c, a, b, ime2::model::ElemBits::kInt8, {true, false}, 2);
  ime2::model::vmadot(c, a, b, ime2::model::ElemBits::kInt4, {false, true});
  std::uint16_t d[64] = {}, s[64] = {};
  ime2::model::vmadot_hp(d, a, b, s, 0, ime2::model::ElemBits::kInt4, {true, true});
  EXPECT_EQ(counts(), (std::map<std::string, std::uint64_t>{
                          {"vmadot.hp i4", 1}, {"vmadot2su i8", 1}, {"vmadotus i4", 1}}));
}

TEST(Ime2Counts, ModelCodeRangeHoldsTheModel) {
  if (!ime2::emulated()) {
    EXPECT_EQ(ime2::emulation_code_range().begin, 0u);
    GTEST_SKIP() << "real builds count nothing";
  }
  const auto r = ime2::emulation_code_range();
  const auto vmadot = reinterpret_cast<std::uintptr_t>(&ime2::model::vmadot);
  const auto hp = reinterpret_cast<std::uintptr_t>(&ime2::model::vmadot_hp);
  EXPECT_LT(r.begin, r.end);
  EXPECT_TRUE(vmadot >= r.begin && vmadot < r.end);
  EXPECT_TRUE(hp >= r.begin && hp < r.end);
  // ... and nothing of the kernels that call it.
  const auto linear = reinterpret_cast<std::uintptr_t>(&ime2::pack_w4b64);
  EXPECT_FALSE(linear >= r.begin && linear < r.end);
}

}  // namespace
