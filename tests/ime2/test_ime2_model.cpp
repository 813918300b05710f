// IME2 instruction models, the instruction wrappers and the weight layout.
// Under the emulation build the wrapper IS the model, so Ime2Insn.* checks the operand plumbing
// (register images in and out); on a K3 it compares the silicon with the models.
#include <gtest/gtest.h>

#include <riscv_vector.h>

#include <array>
#include <cstring>
#include <vector>

#include "ime2/ime2_insn.h"
#include "ime2/ime2_model.h"
#include "ime2/w4b64_ime2_layout.h"
#include "k3k/dispatch.h"
#include "k3k/ime2.h"
#include "k3k/seeded_random.h"

namespace {

using namespace k3k;
using ime2::model::ElemBits;
using Image = std::array<std::uint8_t, 128>;
using CImage = std::array<std::uint8_t, 256>;

Image random_image(SeededRandom& rng) {
  Image r;
  for (auto& b : r) b = static_cast<std::uint8_t>(rng.next());
  return r;
}

std::int32_t lane(const CImage& c, int p) {
  std::int32_t v;
  std::memcpy(&v, c.data() + 4 * p, 4);
  return v;
}

// Independent decoding of the operand matrices: rows of 16 bytes; int4 = two elements per byte,
// the even element in the low nibble.
std::vector<int> matrix(const Image& r, ElemBits bits, bool is_signed) {
  std::vector<int> out;
  for (int byte = 0; byte < 128; ++byte) {
    if (bits == ElemBits::kInt8) {
      out.push_back(is_signed ? static_cast<std::int8_t>(r[byte]) : r[byte]);
    } else {
      for (int half = 0; half < 2; ++half) {
        const int v = (r[byte] >> (4 * half)) & 15;
        out.push_back(is_signed && v > 7 ? v - 16 : v);
      }
    }
  }
  return out;  // 8 rows of K elements
}

TEST(Ime2Model, MatchesMatrixDefinitionForEveryTypeAndSign) {
  SeededRandom rng(1);
  for (ElemBits bits : {ElemBits::kInt4, ElemBits::kInt8}) {
    for (int s = 0; s < 4; ++s) {
      const ime2::model::Operands sign{(s & 2) != 0, (s & 1) != 0};
      const Image a = random_image(rng), b = random_image(rng);
      CImage c{};
      for (int p = 0; p < 64; ++p) {
        const std::int32_t init = p * 1000 - 30000;
        std::memcpy(c.data() + 4 * p, &init, 4);
      }
      ime2::model::vmadot(c.data(), a.data(), b.data(), bits, sign);
      const auto am = matrix(a, bits, sign.a_signed), bm = matrix(b, bits, sign.b_signed);
      const int k = bits == ElemBits::kInt8 ? 16 : 32;
      for (int m = 0; m < 8; ++m) {
        for (int n = 0; n < 8; ++n) {
          std::int64_t want = (8 * m + n) * 1000 - 30000;
          for (int i = 0; i < k; ++i) want += am[m * k + i] * bm[n * k + i];
          ASSERT_EQ(lane(c, 8 * m + n), want) << "bits " << int(bits) << " sign " << s << " m " << m << " n " << n;
        }
      }
    }
  }
}

TEST(Ime2Model, Int4ElementOrderAndSignedness) {
  Image a{}, b{};
  a[0] = 0x21;  // A[0][0] = 1 (low nibble), A[0][1] = 2
  b[0] = 0x03;  // B[0][0] = 3, B[0][1] = 0
  b[16] = 0x50; // B[1][0] = 0, B[1][1] = 5
  CImage c{};
  ime2::model::vmadot(c.data(), a.data(), b.data(), ElemBits::kInt4, {false, false});
  EXPECT_EQ(lane(c, 0), 3);
  EXPECT_EQ(lane(c, 1), 10);
  a.fill(0xFF);  // every A element is 15 unsigned, -1 signed
  b.fill(0x11);
  c.fill(0);
  ime2::model::vmadot(c.data(), a.data(), b.data(), ElemBits::kInt4, {true, false});
  EXPECT_EQ(lane(c, 63), -32);
  c.fill(0);
  ime2::model::vmadot(c.data(), a.data(), b.data(), ElemBits::kInt4, {false, false});
  EXPECT_EQ(lane(c, 63), 480);
}

TEST(Ime2Model, AccumulatorWrapsModulo2To32) {
  Image a{}, b{};
  a[0] = 1;
  b[0] = 2;
  CImage c{};
  const std::int32_t top = 0x7FFFFFFF;
  std::memcpy(c.data(), &top, 4);
  ime2::model::vmadot(c.data(), a.data(), b.data(), ElemBits::kInt8, {true, true});
  EXPECT_EQ(lane(c, 0), static_cast<std::int32_t>(0x80000001u));
}

TEST(Ime2Model, SlideReadsRowsFromTheRegisterPair) {
  SeededRandom rng(2);
  std::array<std::uint8_t, 256> pair;
  for (auto& x : pair) x = static_cast<std::uint8_t>(rng.next());
  const Image b = random_image(rng);
  for (int s = 1; s <= 3; ++s) {
    Image shifted;
    std::memcpy(shifted.data(), pair.data() + 16 * s, 128);
    CImage c_slide{}, c_plain{};
    ime2::model::vmadot(c_slide.data(), pair.data(), b.data(), ElemBits::kInt8, {true, true}, s);
    ime2::model::vmadot(c_plain.data(), shifted.data(), b.data(), ElemBits::kInt8, {true, true});
    EXPECT_EQ(c_slide, c_plain) << "slide " << s;
  }
  CImage c{};
  EXPECT_THROW(ime2::model::vmadot(c.data(), pair.data(), b.data(), ElemBits::kInt4, {true, true}, 1),
               std::invalid_argument);
}

bool ime2_runs() { return !ime2::unusable_because().has_value(); }

template <ime2::ElemBits Bits, ime2::Sign S>
void check_wrapper(SeededRandom& rng) {
  const Image a = random_image(rng), b = random_image(rng);
  CImage c0;
  for (auto& x : c0) x = static_cast<std::uint8_t>(rng.next());
  CImage want = c0;
  ime2::model::vmadot(want.data(), a.data(), b.data(), Bits == ime2::ElemBits::kInt4 ? ElemBits::kInt4 : ElemBits::kInt8,
                      {S == ime2::Sign::kSU || S == ime2::Sign::kSS, S == ime2::Sign::kUS || S == ime2::Sign::kSS});
  vint32m2_t c = __riscv_vle32_v_i32m2(reinterpret_cast<const std::int32_t*>(c0.data()), 64);
  c = ime2::vmadot<Bits, S>(c, __riscv_vle8_v_u8m1(a.data(), 128), __riscv_vle8_v_u8m1(b.data(), 128));
  CImage got;
  __riscv_vse32_v_i32m2(reinterpret_cast<std::int32_t*>(got.data()), c, 64);
  EXPECT_EQ(got, want) << "bits " << int(Bits) << " sign " << int(S);
}

TEST(Ime2Insn, WrappersMatchModels) {
  if (!ime2_runs()) GTEST_SKIP() << *ime2::unusable_because();
  SeededRandom rng(3);
  using ime2::ElemBits;
  using ime2::Sign;
  check_wrapper<ElemBits::kInt4, Sign::kUU>(rng);
  check_wrapper<ElemBits::kInt4, Sign::kUS>(rng);
  check_wrapper<ElemBits::kInt4, Sign::kSU>(rng);
  check_wrapper<ElemBits::kInt4, Sign::kSS>(rng);
  check_wrapper<ElemBits::kInt8, Sign::kUU>(rng);
  check_wrapper<ElemBits::kInt8, Sign::kSS>(rng);
}

// The W4A8 block: 16 * hi + lo == sum_k x * q for int8 x split into nibbles and unsigned codes,
// including the extremes -128/127 and 0/15.
TEST(Ime2Insn, W4A8BlockIsExactInt8TimesUint4) {
  if (!ime2_runs()) GTEST_SKIP() << *ime2::unusable_because();
  SeededRandom rng(4);
  for (int trial = 0; trial < 4; ++trial) {
    std::int8_t x[8][64];
    std::uint8_t q[8][64];
    for (int m = 0; m < 8; ++m)
      for (int k = 0; k < 64; ++k) {
        x[m][k] = trial == 0 ? static_cast<std::int8_t>(m % 2 ? -128 : 127) : static_cast<std::int8_t>(rng.next());
        q[m][k] = trial == 0 ? 15 : static_cast<std::uint8_t>(rng.next() & 15);
      }
    // Operands per the layout in w4b64_ime2_layout.h (K-step ks covers k = 16ks+jj and 32+16ks+jj).
    alignas(64) std::uint8_t alo[2][128], ahi[2][128], bq[2][128];
    for (int ks = 0; ks < 2; ++ks)
      for (int r = 0; r < 8; ++r)
        for (int jj = 0; jj < 16; ++jj) {
          const auto x0 = static_cast<std::uint8_t>(x[r][16 * ks + jj]), x1 = static_cast<std::uint8_t>(x[r][32 + 16 * ks + jj]);
          alo[ks][16 * r + jj] = static_cast<std::uint8_t>((x0 & 15) | (x1 & 15) << 4);
          ahi[ks][16 * r + jj] = static_cast<std::uint8_t>((x0 >> 4) | (x1 & 0xF0));
          bq[ks][16 * r + jj] = static_cast<std::uint8_t>(q[r][16 * ks + jj] | q[r][32 + 16 * ks + jj] << 4);
        }
    vint32m2_t lo = __riscv_vmv_v_x_i32m2(0, 64), hi = lo;
    auto ld = [](const std::uint8_t* p) { return __riscv_vle8_v_u8m1(p, 128); };
    ime2::w4a8_block(lo, hi, ld(alo[0]), ld(ahi[0]), ld(alo[1]), ld(ahi[1]), ld(bq[0]), ld(bq[1]));
    std::int32_t l[64], h[64];
    __riscv_vse32_v_i32m2(l, lo, 64);
    __riscv_vse32_v_i32m2(h, hi, 64);
    for (int m = 0; m < 8; ++m)
      for (int n = 0; n < 8; ++n) {
        std::int32_t want = 0;
        for (int k = 0; k < 64; ++k) want += x[m][k] * q[n][k];
        ASSERT_EQ(16 * h[8 * m + n] + l[8 * m + n], want) << "trial " << trial << " m " << m << " n " << n;
      }
  }
}

TEST(Ime2Layout, TransposeIndexIsAPermutation) {
  std::array<int, ime2::kHalfUnitBytes> seen{};
  for (auto i : ime2::kTransposeHalf) ++seen[i];
  for (int v : seen) ASSERT_EQ(v, 1);
}

TEST(Ime2Dispatch, PathChoiceFollowsVlen) {
  ASSERT_TRUE(path_compiled(KernelPath::kIme2));
  if (ime2_runs()) {
    EXPECT_EQ(decide_path().path, KernelPath::kIme2);
    const PathDecision forced = decide_path(KernelPath::kIme2);
    EXPECT_EQ(forced.path, KernelPath::kIme2);
    if (ime2::emulated()) EXPECT_NE(forced.reason.find("emulated"), std::string::npos) << forced.reason;
  } else {
    // qemu at VLEN != 1024 (or a real build on a CPU without IME2): the chain falls to RVV.
    EXPECT_EQ(decide_path().path, KernelPath::kRvv);
    EXPECT_NE(decide_path().reason.find("IME2"), std::string::npos) << decide_path().reason;
    EXPECT_THROW(decide_path(KernelPath::kIme2), std::invalid_argument);
  }
  std::printf("ime2: %s\n", ime2_runs() ? "usable" : ime2::unusable_because()->c_str());
}

// The emulation refuses what the A100 raises illegal-instruction for (IME2 spec, register rules):
// a two-register C at an odd vd (v31 would run past the register file), and C over a source.
// A kernel that broke a rule would otherwise pass here and fault on the board.
template <int kVd, int kVs1>
void vmadot_at() {
  asm volatile(
      "vsetvli t0, zero, e8, m1, ta, ma\n\t" K3_IME2_INSN
      "%[f3], %[f7], v%[vd], v%[vs1], v28" ::[f3] "i"(
          ime2::encoding::vmadot_funct3(ime2::Sign::kUU)),
      [f7] "i"(ime2::encoding::vmadot_funct7(ime2::ElemBits::kInt4)), [vd] "i"(kVd), [vs1] "i"(kVs1)
      : "t0", "v8", "v9", "v10", "v31", "memory" K3_IME2_CLOBBER_RA);
}

TEST(Ime2EmulationDeathTest, RefusesTheRegisterRulesTheChipEnforces) {
  if (!ime2::emulated() || ime2::unusable_because())
    GTEST_SKIP() << "the emulation's decoder runs in emulation builds at VLEN 1024";
  EXPECT_DEATH((vmadot_at<9, 24>()), "illegal instruction .*vd must be even");
  EXPECT_DEATH((vmadot_at<31, 24>()), "illegal instruction .*vd must be even");
  EXPECT_DEATH((vmadot_at<8, 9>()), "illegal instruction .*overlap a source");
  vmadot_at<8, 24>();  // the rules' legal neighbour runs
}

}  // namespace
