// Rotary position embedding, NeoX / "rotate_half" style as used by Qwen3 and Qwen3.5:
// within the first rotary_dim dims of a head vector x, element i pairs with i + rotary_dim/2
// (i < rotary_dim/2) and
//     y[i]        = x[i] * cos(a_i) - x[i + h] * sin(a_i)
//     y[i + h]    = x[i + h] * cos(a_i) + x[i] * sin(a_i),      h = rotary_dim / 2,
//     a_i = pos * inv_freq_i,   inv_freq_i = theta^(-2i / rotary_dim);
// dims >= rotary_dim pass through untouched (partial RoPE).
//
// The angle is formed in double (pos * inv_freq_i, positions reach 40960 and a float angle would be
// off by up to ~4e-3 rad) and only cos/sin are rounded to float, once, into a RopeTable that every
// kernel reuses. The KV cache's rotate-on-write and the attention kernels' rotation of Q both read
// such tables, so Q and K see bitwise identical cos/sin.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "k3k/aligned_buffer.h"
#include "k3k/worker_pool.h"

namespace k3k {

struct RopeConfig {
  int rotary_dim = 0;      // leading dims rotated; even and <= head_dim (0 disables RoPE)
  double theta = 10000.0;  // base; must be finite and > 0
};

// The two model families the kernels target.
inline constexpr RopeConfig kQwen3Rope{128, 1.0e6};  // head_dim 128, full rotation
inline constexpr RopeConfig kQwen35Rope{64, 1.0e7};  // head_dim 256, rotary_dim 64 (partial)

// Throws std::invalid_argument naming `op` and the bad field.
void validate_rope(const RopeConfig& rope, int head_dim, const char* op);

// inv_freq_i = theta^(-2i / rotary_dim) in double, i < rotary_dim / 2 (the exact formula the
// table uses; exposed so that references and other layers use the same one).
double rope_inv_freq(const RopeConfig& rope, int i);

// cos/sin for positions [first_pos, first_pos + count): [count][rotary_dim/2] floats each,
// cos_at(p)[i] = float(cos(double(p) * rope_inv_freq(i))) (likewise sin).
class RopeTable {
 public:
  RopeTable() = default;
  // Building is parallel over positions (one double cos + sin per entry).
  RopeTable(const RopeConfig& rope, std::int64_t first_pos, std::int64_t count, WorkerPool& pool)
      : RopeTable(rope, first_pos, count, &pool) {}
  // Serial build, for a handful of positions (decode).
  RopeTable(const RopeConfig& rope, std::int64_t first_pos, std::int64_t count)
      : RopeTable(rope, first_pos, count, nullptr) {}

  // The table of other positions (or another RoPE) in this one's storage, grown only when too
  // small: what a decode step's append does with a table no cache reads any more, so that a step
  // allocates nothing. `pool` null: the serial build.
  void rebuild(const RopeConfig& rope, std::int64_t first_pos, std::int64_t count,
               WorkerPool* pool);

  int half() const { return half_; }
  std::int64_t first_pos() const { return first_pos_; }
  std::int64_t count() const { return count_; }
  const float* cos_at(std::int64_t pos) const { return cos_.data() + (pos - first_pos_) * half_; }
  const float* sin_at(std::int64_t pos) const { return sin_.data() + (pos - first_pos_) * half_; }

 private:
  // pool == nullptr: the serial build.
  RopeTable(const RopeConfig& rope, std::int64_t first_pos, std::int64_t count, WorkerPool* pool);
  void fill(const double* inv_freq, std::int64_t begin, std::int64_t end);
  int half_ = 0;
  std::int64_t first_pos_ = 0;
  std::int64_t count_ = 0;
  AlignedBuffer<float> cos_;
  AlignedBuffer<float> sin_;
};

// Rotates one head vector: dst = rope(src) with the table row (cos, sin) of its position; `half` is
// rotary_dim / 2; dims >= 2*half are copied. dst may be the same pointer as src (in place), but the
// two must not otherwise overlap. Every rotated component is fl(fl(a*c) -/+ fl(b*s)).
void rope_rotate(const float* src, float* dst, int head_dim, int half, const float* cos,
                 const float* sin);

// In place over x = [tokens][heads][head_dim], token t at position first_pos + t.
// Parallel over token chunks; bitwise identical for any worker count.
void rope_apply(std::span<float> x, std::int64_t tokens, int heads, int head_dim,
                std::int64_t first_pos, const RopeConfig& rope, WorkerPool& pool);

}  // namespace k3k
