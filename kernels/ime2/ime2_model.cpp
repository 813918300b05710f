#include "ime2/ime2_model.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>

#include "k3k/fp16.h"

// Everything below is code of the model: one section, skipped by the instruction counter.
#pragma clang section text = "k3_ime2_model"

extern "C" char __start_k3_ime2_model[], __stop_k3_ime2_model[];  // defined by the linker

namespace k3k::ime2::model {

namespace {
std::array<std::atomic<std::uint64_t>, kKinds> g_executed{};

int kind_of(ElemBits bits, Operands sign, int slide, bool hp) {
  return (hp ? 32 : 0) | (bits == ElemBits::kInt8 ? 16 : 0) | slide << 2 | (sign.a_signed ? 2 : 0) |
         (sign.b_signed ? 1 : 0);
}
void count(ElemBits bits, Operands sign, int slide, bool hp) {
  g_executed[static_cast<std::size_t>(kind_of(bits, sign, slide, hp))].fetch_add(
      1, std::memory_order_relaxed);
}
}  // namespace

std::uint64_t executed(int kind) {
  return kind < 0 || kind >= kKinds
             ? 0
             : g_executed[static_cast<std::size_t>(kind)].load(std::memory_order_relaxed);
}

std::string kind_name(int kind) {
  static constexpr const char* kSigns[4] = {"u", "us", "su", ""};  // index 2*a_signed + b_signed
  const int slide = (kind >> 2) & 3;
  return "vmadot" + (slide > 0 ? std::to_string(slide) : std::string()) + kSigns[kind & 3] +
         ((kind & 32) != 0 ? ".hp" : "") + ((kind & 16) != 0 ? " i8" : " i4");
}

void reset_executed() {
  for (auto& c : g_executed) c.store(0, std::memory_order_relaxed);
}

CodeRange code_range() {
  return {reinterpret_cast<std::uintptr_t>(__start_k3_ime2_model),
          reinterpret_cast<std::uintptr_t>(__stop_k3_ime2_model)};
}

int element(const std::uint8_t* reg, int e, ElemBits bits, bool is_signed) {
  int v = 0;
  int width = 8;
  if (bits == ElemBits::kInt8) {
    v = reg[e];
  } else {
    v = (reg[e >> 1] >> (4 * (e & 1))) & 0x0F;  // element 2i: low nibble of byte i
    width = 4;
  }
  if (is_signed && v >= (1 << (width - 1))) v -= 1 << width;
  return v;
}

namespace {

// int4 vmadot in 16-bit lanes of 64-bit words (the same sums as the element loop below, in a
// tenth of the emulation's time: the counts skip this code, the qemu runs of a whole model do
// not). Elements are offset to unsigned (e' = e + 8 for a signed operand: the nibble XOR 8, so
// 0..15), B's four columns n of a word per k; per (m, k) one scalar a' times k's two words: a lane
// sums 32 products of at most 15 * 15, 7200 < 2^16, so no lane carries into the next. Then
//   sum_k a b = sum_k a'b' - ob sum_k a' - oa sum_k b' + 32 oa ob    (oa, ob: 8 when signed)
// exactly, added to C's int32 lanes with wrap-around like the products.
void vmadot_int4(std::uint8_t* c, const std::uint8_t* a, const std::uint8_t* b, Operands sign) {
  constexpr int kDepth = 32;
  const std::uint32_t flip_a = sign.a_signed ? 8 : 0, flip_b = sign.b_signed ? 8 : 0;
  // Every element assigned, none zero-initialised: a zeroing the compiler turns into a memset call
  // would run outside the section the counter skips and be counted as the kernel's.
  std::uint64_t words[kDepth][2];
  std::int32_t b_sum[kTileN];
  for (int k = 0; k < kDepth; ++k) {
    for (int half = 0; half < 2; ++half) {
      std::uint64_t word = 0;
      for (int q = 0; q < 4; ++q) {
        const std::uint32_t byte = b[16 * (4 * half + q) + k / 2];
        const std::uint32_t e = ((k % 2 == 0 ? byte : byte >> 4) & 15) ^ flip_b;  // k = 2j, 2j + 1
        word |= static_cast<std::uint64_t>(e) << (16 * q);
      }
      words[k][half] = word;
    }
  }
  for (int n = 0; n < kTileN; ++n) {
    std::int32_t sum = 0;
    for (int j = 0; j < kDepth / 2; ++j) {
      const std::uint32_t byte = b[16 * n + j];
      sum += static_cast<std::int32_t>(((byte & 15) ^ flip_b) + ((byte >> 4) ^ flip_b));
    }
    b_sum[n] = sum;
  }
  const std::int32_t oa = static_cast<std::int32_t>(flip_a), ob = static_cast<std::int32_t>(flip_b);
  for (int m = 0; m < kTileM; ++m) {
    std::uint64_t acc[2] = {0, 0};
    std::int32_t a_sum = 0;
    for (int j = 0; j < kDepth / 2; ++j) {
      const std::uint32_t byte = a[16 * m + j];
      const std::uint64_t lo = (byte & 15) ^ flip_a, hi = (byte >> 4) ^ flip_a;
      acc[0] += lo * words[2 * j][0] + hi * words[2 * j + 1][0];
      acc[1] += lo * words[2 * j][1] + hi * words[2 * j + 1][1];
      a_sum += static_cast<std::int32_t>(lo + hi);
    }
    for (int n = 0; n < kTileN; ++n) {
      const auto sum = static_cast<std::int32_t>((acc[n / 4] >> (16 * (n % 4))) & 0xFFFF);
      const std::int32_t d = sum - ob * a_sum - oa * b_sum[n] + kDepth * oa * ob;
      std::uint32_t lane;
      std::memcpy(&lane, c + 4 * (kTileN * m + n), 4);
      lane += static_cast<std::uint32_t>(d);
      std::memcpy(c + 4 * (kTileN * m + n), &lane, 4);
    }
  }
}

}  // namespace

void vmadot(std::uint8_t* c, const std::uint8_t* a, const std::uint8_t* b, ElemBits bits,
            Operands sign, int slide) {
  if (slide < 0 || slide > 3 || (slide > 0 && bits != ElemBits::kInt8)) {
    throw std::invalid_argument("ime2::model::vmadot: slides 1..3 exist for int8 only");
  }
  count(bits, sign, slide, false);
  if (bits == ElemBits::kInt4) return vmadot_int4(c, a, b, sign);
  const int k_depth = bits == ElemBits::kInt8 ? 16 : 32;
  for (int m = 0; m < kTileM; ++m) {
    for (int n = 0; n < kTileN; ++n) {
      const int p = kTileN * m + n;
      std::uint32_t lane;
      std::memcpy(&lane, c + 4 * p, 4);  // little-endian host and target
      for (int k = 0; k < k_depth; ++k) {
        const int prod = element(a, (m + slide) * k_depth + k, bits, sign.a_signed) *
                         element(b, n * k_depth + k, bits, sign.b_signed);
        lane += static_cast<std::uint32_t>(prod);  // two's-complement wrap, modulo 2^32
      }
      std::memcpy(c + 4 * p, &lane, 4);
    }
  }
}

std::uint16_t round_to_fp16(double x) {
  if (std::isnan(x)) return 0x7E00;
  const std::uint16_t sign = std::signbit(x) ? 0x8000 : 0;
  const double ax = std::fabs(x);
  if (ax >= 65520.0)
    return static_cast<std::uint16_t>(sign | 0x7C00);  // rounds past the largest half
  if (ax == 0.0) return sign;
  int e2 = 0;
  std::frexp(ax, &e2);                             // ax = f * 2^e2, f in [0.5, 1)
  const int quantum = std::max(e2 - 1, -14) - 10;  // 11 significant bits; subnormal spacing 2^-24
  const double r = std::nearbyint(std::ldexp(ax, -quantum));  // default mode: ties to even
  // r * 2^quantum has at most 11 significant bits and is < 65520: exact in float, so the float
  // conversion below does not round again.
  return static_cast<std::uint16_t>(sign |
                                    fp32_to_fp16(static_cast<float>(std::ldexp(r, quantum))));
}

void vmadot_hp(std::uint16_t* d, const std::uint8_t* a, const std::uint8_t* b,
               const std::uint16_t* scales, int imm3, ElemBits bits, Operands sign,
               HpRounding rounding) {
  if (imm3 < 0 || imm3 > 7) throw std::invalid_argument("ime2::model::vmadot_hp: imm3 is 0..7");
  count(bits, sign, 0, true);
  const int k_depth = bits == ElemBits::kInt8 ? 16 : 32;
  for (int m = 0; m < kTileM; ++m) {
    for (int n = 0; n < kTileN; ++n) {
      const int p = kTileN * m + n;
      std::int64_t t = 0;
      for (int k = 0; k < k_depth; ++k) {
        t += element(a, m * k_depth + k, bits, sign.a_signed) *
             element(b, n * k_depth + k, bits, sign.b_signed);
      }
      const double s = fp16_to_fp32(scales[8 * imm3 + n]);
      const double c = fp16_to_fp32(d[p]);
      const double tf = fp16_to_fp32(round_to_fp16(static_cast<double>(t)));
      // fp16 x fp16 and fp16 + fp16 are exact in double, so each rne below is the only rounding.
      const double product =
          rounding == HpRounding::kLiteral ? fp16_to_fp32(round_to_fp16(tf * s)) : tf * s;
      d[p] = round_to_fp16(c + product);
    }
  }
}

}  // namespace k3k::ime2::model
