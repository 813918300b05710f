// The IME2 selftest (`k3bench --selftest ime2`): every instruction the kernels issue, run through
// the same wrappers the kernels use on fixed inputs, and compared bit for bit with the software
// model (ime2_model.h). On a K3 the first run settles the reference's open points the cases name;
// in emulation builds the wrapper is the model, so only the register plumbing is exercised.
//
// Inputs (all deterministic; "random" = SeededRandom with the seed given):
//   lane-layout   A[m][m] = 1, A[m][8+m] = 15, B[n][m] = p % 15, B[n][8+m] = p / 15
//                 (p = 8m+n), C = 0: the model gives C lane p = p, so another lane order
//                 (AMBIG-1), a row stride other than 16 bytes, or rows 4..7 outside vd+1 shows up
//                 as a mismatch at that lane.
//   max-unsigned  A = B = 0xFF (all codes 15), C lane p = 1000p - 30000: 32 * 225 added to C.
//   int32-wrap    as max-unsigned with C = 0x7FFFFFFF - 100: wraps (model) or saturates
//                 (AMBIG-10).
//   signed-nib    A bytes 0x78 (nibbles -8, 7 when signed), B rows alternating 0xF1 / 0x1F:
//                 a signed 4-bit sign extension (not 8-bit) for A only, B zero-extended.
//   random        random A, B and C (seeds 11, 12, 13 per instruction).
//   short-vl      random inputs issued after vsetvli with vl = 16 (e8, m1) instead of VLMAX:
//                 equal to the model iff the tile ignores vl (AMBIG-8). The kernels use VLMAX.
//   w4a8-block    the kernels' fused 4-instruction block (vmadotu + vmadotsu, two K-steps) on
//                 random int8 activations split into nibbles and random codes: lanes 0..63 lo,
//                 64..127 hi.
//   .hp cases (64 fp16 lanes compared as bits; inputs documented at hp_cases below):
//   hp-lane-layout  exact p * 2^(n%4) per lane: 16-bit lane order (AMBIG-1), scale index
//                   8*imm3 + n.
//   hp-signed       small exact values: ss signedness, accumulation into non-zero C.
//   hp-rounding     random, |t| > 2048, random scales and C: which steps round and how
//                   (AMBIG-5/6; a mismatch means retrying with model::HpRounding::kFused, not a
//                   kernel bug: the `.hp` kernel's error bound holds for either reading).
//   w4a8-block-hp   the `.hp` kernel's fused 4-instruction block on values exact in fp16.
// Nibble order within a byte (element 2i low) cannot be observed with vmadot alone: A and B use
// the same element order, so swapping it permutes k in both and leaves every sum unchanged. The
// kernels rely on exactly that consistency, not on the order itself.
#include <riscv_vector.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <vector>

#include "ime2/ime2_insn.h"
#include "ime2/ime2_model.h"
#include "k3k/ime2.h"
#include "k3k/seeded_random.h"

namespace k3k::ime2 {

namespace {

using Reg = std::array<std::uint8_t, 128>;
using CReg = std::array<std::int32_t, 64>;

Reg random_reg(std::uint64_t seed) {
  SeededRandom rng(seed);
  Reg r;
  for (auto& b : r) b = static_cast<std::uint8_t>(rng.next());
  return r;
}

CReg random_c(std::uint64_t seed) {
  SeededRandom rng(seed);
  CReg c;
  for (auto& x : c) x = static_cast<std::int32_t>(rng.next() % 2000001) - 1000000;
  return c;
}

void set_nibble(Reg& r, int e, int v) {
  auto& byte = r[static_cast<std::size_t>(e / 2)];
  byte = static_cast<std::uint8_t>(e % 2 ? (byte & 0x0F) | (v << 4) : (byte & 0xF0) | (v & 15));
}

SelftestCase compare(std::string instruction, std::string name, std::string settles, bool relied_on,
                     const std::vector<std::int32_t>& got, const std::vector<std::int32_t>& want) {
  SelftestCase c{
      std::move(instruction), std::move(name), std::move(settles), relied_on, true, -1, 0, 0};
  for (std::size_t p = 0; p < want.size(); ++p) {
    if (got[p] != want[p]) {
      c.pass = false;
      c.first_mismatch = static_cast<int>(p);
      c.got = got[p];
      c.want = want[p];
      break;
    }
  }
  return c;
}

template <Sign S>
std::vector<std::int32_t> model_of(const Reg& a, const Reg& b, const CReg& c0) {
  CReg c = c0;
  model::vmadot(reinterpret_cast<std::uint8_t*>(c.data()), a.data(), b.data(),
                model::ElemBits::kInt4,
                {S == Sign::kSU || S == Sign::kSS, S == Sign::kUS || S == Sign::kSS});
  return {c.begin(), c.end()};
}

// The wrapper the kernels call; avl = 0 means VLMAX (the kernels' only use).
template <Sign S>
std::vector<std::int32_t> run_insn(const Reg& a, const Reg& b, const CReg& c0,
                                   std::size_t avl = 0) {
  vint32m2_t c = __riscv_vle32_v_i32m2(c0.data(), 64);
  const vuint8m1_t va = __riscv_vle8_v_u8m1(a.data(), 128), vb = __riscv_vle8_v_u8m1(b.data(), 128);
  c = avl == 0 ? vmadot<ElemBits::kInt4, S>(c, va, vb)
               : vmadot_at_vl<ElemBits::kInt4, S>(c, va, vb, avl);
  CReg out;
  __riscv_vse32_v_i32m2(out.data(), c, 64);
  return {out.begin(), out.end()};
}

template <Sign S>
SelftestCase insn_case(const char* instruction, const char* name, const char* settles,
                       bool relied_on, const Reg& a, const Reg& b, const CReg& c0,
                       std::size_t avl = 0) {
  return compare(instruction, name, settles, relied_on, run_insn<S>(a, b, c0, avl),
                 model_of<S>(a, b, c0));
}

SelftestCase w4a8_block_case() {
  SeededRandom rng(21);
  std::array<Reg, 2> alo{}, ahi{}, bq{};
  for (int ks = 0; ks < 2; ++ks)
    for (int i = 0; i < 128; ++i) {
      const auto x0 = static_cast<std::uint8_t>(rng.next()),
                 x1 = static_cast<std::uint8_t>(rng.next());
      alo[ks][i] = static_cast<std::uint8_t>((x0 & 15) | (x1 & 15) << 4);
      ahi[ks][i] = static_cast<std::uint8_t>((x0 >> 4) | (x1 & 0xF0));
      bq[ks][i] = static_cast<std::uint8_t>(rng.next());
    }
  vint32m2_t lo = __riscv_vmv_v_x_i32m2(0, 64), hi = lo;
  auto ld = [](const Reg& r) { return __riscv_vle8_v_u8m1(r.data(), 128); };
  w4a8_block(lo, hi, ld(alo[0]), ld(ahi[0]), ld(alo[1]), ld(ahi[1]), ld(bq[0]), ld(bq[1]));
  std::vector<std::int32_t> got(128);
  __riscv_vse32_v_i32m2(got.data(), lo, 64);
  __riscv_vse32_v_i32m2(got.data() + 64, hi, 64);
  const CReg zero{};
  std::vector<std::int32_t> want = model_of<Sign::kUU>(alo[0], bq[0], zero);
  CReg l, h;
  std::copy(want.begin(), want.end(), l.begin());
  want = model_of<Sign::kUU>(alo[1], bq[1], l);
  const auto h0 = model_of<Sign::kSU>(ahi[0], bq[0], zero);
  std::copy(h0.begin(), h0.end(), h.begin());
  const auto h1 = model_of<Sign::kSU>(ahi[1], bq[1], h);
  want.insert(want.end(), h1.begin(), h1.end());
  return compare("vmadotu+vmadotsu i4", "w4a8-block", "", true, got, want);
}

// ---- .hp (fp16 block-scale) cases: 64 fp16 lanes, compared as raw bits.
using HReg = std::array<std::uint16_t, 64>;

template <Sign S, int Imm3>
std::vector<std::int32_t> run_hp(const Reg& a, const Reg& b, const HReg& scales, const HReg& c0) {
  vuint16m1_t c = __riscv_vle16_v_u16m1(c0.data(), 64);
  c = vmadot_hp_i4<S, Imm3>(c, __riscv_vle8_v_u8m1(a.data(), 128),
                            __riscv_vle8_v_u8m1(b.data(), 128),
                            __riscv_vle16_v_u16m1(scales.data(), 64));
  HReg out;
  __riscv_vse16_v_u16m1(out.data(), c, 64);
  return {out.begin(), out.end()};
}

std::vector<std::int32_t> model_hp(const Reg& a, const Reg& b, const HReg& scales, const HReg& c0,
                                   int imm3, Sign s) {
  HReg c = c0;
  model::vmadot_hp(c.data(), a.data(), b.data(), scales.data(), imm3, model::ElemBits::kInt4,
                   {s == Sign::kSU || s == Sign::kSS, s == Sign::kUS || s == Sign::kSS});
  return {c.begin(), c.end()};
}

template <Sign S, int Imm3>
SelftestCase hp_case(const char* instruction, const char* name, const char* settles, bool relied_on,
                     const Reg& a, const Reg& b, const HReg& scales, const HReg& c0) {
  return compare(instruction, name, settles, relied_on, run_hp<S, Imm3>(a, b, scales, c0),
                 model_hp(a, b, scales, c0, Imm3, S));
}

HReg fp16_fill(double v) {
  HReg r;
  r.fill(model::round_to_fp16(v));
  return r;
}

// Random A/B with |t| up to 32 * 15 * 8 (beyond 2048, where int -> fp16 rounds), random scales in
// [2^-6, 2^-1) and random non-zero C: every rounding step of the literal reading is exercised.
void hp_random(std::uint64_t seed, Reg& a, Reg& b, HReg& scales, HReg& c0) {
  a = random_reg(seed);
  b = random_reg(seed + 1);
  SeededRandom rng(seed + 2);
  for (auto& x : a) x |= 0x88;  // large unsigned nibbles (8..15) so |t| often exceeds 2048
  for (auto& x : scales) x = model::round_to_fp16(rng.uniform(0x1p-6, 0x1p-1));
  for (auto& x : c0) x = model::round_to_fp16(rng.uniform(-300.0, 300.0));
}

std::vector<SelftestCase> hp_cases() {
  std::vector<SelftestCase> out;
  // hp-lane-layout: A[m][m] = 1, A[m][8+m] = 8, B[n][m] = p % 8, B[n][8+m] = p / 8 (signed, 0..7),
  // so t = p; group 2 holds s[n] = 2^(n % 4), every other group 3: lane p must hold p * 2^(n % 4)
  // (exact), which pins the 16-bit lane order (AMBIG-1) and the per-column scale index 8*imm3 + n.
  Reg a{}, b{};
  for (int m = 0; m < 8; ++m) {
    set_nibble(a, 32 * m + m, 1);
    set_nibble(a, 32 * m + 8 + m, 8);
    for (int n = 0; n < 8; ++n) {
      set_nibble(b, 32 * n + m, (8 * m + n) % 8);
      set_nibble(b, 32 * n + 8 + m, (8 * m + n) / 8);
    }
  }
  HReg scales = fp16_fill(3.0);
  for (int n = 0; n < 8; ++n)
    scales[static_cast<std::size_t>(16 + n)] = model::round_to_fp16(double(1 << (n % 4)));
  out.push_back(hp_case<Sign::kUS, 2>("vmadotus.hp i4", "hp-lane-layout", "AMBIG-1", true, a, b,
                                      scales, HReg{}));

  // hp-signed: A bytes 0x78 (signed -8, 7), B bytes 0x9F / 0xF9 by row (signed -1, -7 / -7, -1),
  // s = 0.25 in group 5, C = 1.5: small exact integers times powers of two, so every reading of
  // the rounding (AMBIG-6) gives the same bits: checks the ss signedness and the accumulation into
  // C.
  Reg sa, sb;
  sa.fill(0x78);
  for (int i = 0; i < 128; ++i) sb[static_cast<std::size_t>(i)] = (i / 16) % 2 ? 0xF9 : 0x9F;
  out.push_back(hp_case<Sign::kSS, 5>("vmadot.hp i4", "hp-signed", "", true, sa, sb,
                                      fp16_fill(0.25), fp16_fill(1.5)));

  HReg c0;
  hp_random(31, a, b, scales, c0);
  out.push_back(
      hp_case<Sign::kUS, 0>("vmadotus.hp i4", "hp-rounding", "AMBIG-5/6", false, a, b, scales, c0));
  hp_random(41, a, b, scales, c0);
  out.push_back(
      hp_case<Sign::kSS, 7>("vmadot.hp i4", "hp-rounding", "AMBIG-5/6", false, a, b, scales, c0));
  return out;
}

// The `.hp` kernel's fused block (w4a8_block_hp<1>: vmadotus.hp imm3 1 and vmadot.hp imm3 5 over
// two K-steps) on values whose every intermediate is exact in fp16 (int8 x in [-16, 15], signed
// codes in {-1, 0, 1}, power-of-two scales): bits must match whatever the rounding reading is.
SelftestCase w4a8_block_hp_case() {
  SeededRandom rng(51);
  std::array<Reg, 2> alo{}, ahi{}, bq{};
  for (int ks = 0; ks < 2; ++ks)
    for (int i = 0; i < 128; ++i) {
      const auto x0 = static_cast<std::uint8_t>(static_cast<int>(rng.next() % 32) - 16);
      const auto x1 = static_cast<std::uint8_t>(static_cast<int>(rng.next() % 32) - 16);
      alo[ks][i] = static_cast<std::uint8_t>((x0 & 15) | (x1 & 15) << 4);
      ahi[ks][i] = static_cast<std::uint8_t>((x0 >> 4) | (x1 & 0xF0));
      const int q0 = static_cast<int>(rng.next() % 3) - 1,
                q1 = static_cast<int>(rng.next() % 3) - 1;
      bq[ks][i] = static_cast<std::uint8_t>((q0 & 15) | (q1 & 15) << 4);
    }
  HReg scales{};
  for (int n = 0; n < 8; ++n) {
    scales[static_cast<std::size_t>(8 + n)] = model::round_to_fp16(std::ldexp(1.0, -(n % 4)));
    scales[static_cast<std::size_t>(40 + n)] = model::round_to_fp16(16 * std::ldexp(1.0, -(n % 4)));
  }
  auto ld = [](const Reg& r) { return __riscv_vle8_v_u8m1(r.data(), 128); };
  vuint16m1_t c = __riscv_vmv_v_x_u16m1(0, 64);
  c = w4a8_block_hp<1>(c, ld(alo[0]), ld(ahi[0]), ld(alo[1]), ld(ahi[1]), ld(bq[0]), ld(bq[1]),
                       __riscv_vle16_v_u16m1(scales.data(), 64));
  HReg got;
  __riscv_vse16_v_u16m1(got.data(), c, 64);
  HReg want{};
  auto step = [&](const Reg& x, const Reg& q, int imm3, Sign s) {
    model::vmadot_hp(want.data(), x.data(), q.data(), scales.data(), imm3, model::ElemBits::kInt4,
                     {s == Sign::kSS, true});
  };
  step(alo[0], bq[0], 1, Sign::kUS);
  step(ahi[0], bq[0], 5, Sign::kSS);
  step(alo[1], bq[1], 1, Sign::kUS);
  step(ahi[1], bq[1], 5, Sign::kSS);
  return compare("vmadotus+vmadot.hp i4", "w4a8-block-hp", "", true, {got.begin(), got.end()},
                 {want.begin(), want.end()});
}

}  // namespace

std::vector<SelftestCase> selftest() {
  std::vector<SelftestCase> out;
  // lane-layout: C lane p must come out as p.
  Reg a{}, b{};
  for (int m = 0; m < 8; ++m) {
    set_nibble(a, 32 * m + m, 1);
    set_nibble(a, 32 * m + 8 + m, 15);
    for (int n = 0; n < 8; ++n) {
      const int p = 8 * m + n;
      set_nibble(b, 32 * n + m, p % 15);
      set_nibble(b, 32 * n + 8 + m, p / 15);
    }
  }
  out.push_back(insn_case<Sign::kUU>("vmadotu i4", "lane-layout", "AMBIG-1", true, a, b, CReg{}));

  Reg ones;
  ones.fill(0xFF);
  CReg ramp;
  for (int p = 0; p < 64; ++p) ramp[static_cast<std::size_t>(p)] = 1000 * p - 30000;
  out.push_back(insn_case<Sign::kUU>("vmadotu i4", "max-unsigned", "", true, ones, ones, ramp));
  CReg top;
  top.fill(0x7FFFFFFF - 100);
  out.push_back(
      insn_case<Sign::kUU>("vmadotu i4", "int32-wrap", "AMBIG-10", false, ones, ones, top));
  out.push_back(insn_case<Sign::kUU>("vmadotu i4", "random", "", true, random_reg(11),
                                     random_reg(12), random_c(13)));
  out.push_back(insn_case<Sign::kUU>("vmadotu i4", "short-vl", "AMBIG-8", false, random_reg(14),
                                     random_reg(15), random_c(16), 16));

  Reg sa, sb;
  sa.fill(0x78);
  for (int i = 0; i < 128; ++i) sb[static_cast<std::size_t>(i)] = (i / 16) % 2 ? 0x1F : 0xF1;
  out.push_back(insn_case<Sign::kSU>("vmadotsu i4", "signed-nib", "", true, sa, sb, ramp));
  out.push_back(insn_case<Sign::kSU>("vmadotsu i4", "random", "", true, random_reg(17),
                                     random_reg(18), random_c(19)));

  out.push_back(w4a8_block_case());
  for (auto& c : hp_cases()) out.push_back(std::move(c));
  out.push_back(w4a8_block_hp_case());
  return out;
}

}  // namespace k3k::ime2
