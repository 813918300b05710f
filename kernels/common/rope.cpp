#include "k3k/rope.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <mutex>
#include <vector>

#include "common/checks.h"

namespace k3k {

using detail::fail;

void validate_rope(const RopeConfig& rope, int head_dim, const char* op) {
  if (head_dim <= 0) fail(op, ": head_dim (", head_dim, ") must be positive");
  if (rope.rotary_dim < 0 || rope.rotary_dim % 2 != 0 || rope.rotary_dim > head_dim) {
    fail(op, ": rope.rotary_dim (", rope.rotary_dim, ") must be even and in [0, head_dim (",
         head_dim, ")]");
  }
  if (!(rope.theta > 0.0) || !std::isfinite(rope.theta)) {
    fail(op, ": rope.theta (", rope.theta, ") must be finite and > 0");
  }
}

double rope_inv_freq(const RopeConfig& rope, int i) {
  return std::pow(rope.theta, -2.0 * static_cast<double>(i) / static_cast<double>(rope.rotary_dim));
}

namespace {
constexpr std::int64_t kTablePositionsPerTask = 64;
constexpr std::int64_t kRopeTokensPerTask = 16;

// rope_inv_freq of every pair of the last RoPE a table was built for, kept: a decode step builds
// one table of one position, where the rotary_dim / 2 powers cost as much as the cos and sin.
std::shared_ptr<const std::vector<double>> inv_freqs(const RopeConfig& rope) {
  static std::mutex mu;
  static RopeConfig kept_rope;
  static std::shared_ptr<const std::vector<double>> kept;
  const std::lock_guard lock(mu);
  if (kept != nullptr && kept_rope.rotary_dim == rope.rotary_dim && kept_rope.theta == rope.theta)
    return kept;
  auto f = std::make_shared<std::vector<double>>(static_cast<std::size_t>(rope.rotary_dim / 2));
  for (int i = 0; i < rope.rotary_dim / 2; ++i)
    (*f)[static_cast<std::size_t>(i)] = rope_inv_freq(rope, i);
  kept_rope = rope;
  kept = std::move(f);
  return kept;
}
}  // namespace

void RopeTable::fill(const double* inv_freq, std::int64_t begin, std::int64_t end) {
  for (std::int64_t r = begin; r < end; ++r) {
    const double pos = static_cast<double>(first_pos_ + r);
    float* c = cos_.data() + r * half_;
    float* s = sin_.data() + r * half_;
    for (int i = 0; i < half_; ++i) {
      const double angle = pos * inv_freq[i];
      c[i] = static_cast<float>(std::cos(angle));
      s[i] = static_cast<float>(std::sin(angle));
    }
  }
}

RopeTable::RopeTable(const RopeConfig& rope, std::int64_t first_pos, std::int64_t count,
                     WorkerPool* pool) {
  rebuild(rope, first_pos, count, pool);
}

void RopeTable::rebuild(const RopeConfig& rope, std::int64_t first_pos, std::int64_t count,
                        WorkerPool* pool) {
  if (first_pos < 0) detail::fail("RopeTable: first_pos (", first_pos, ") is negative");
  if (count < 0) detail::fail("RopeTable: count (", count, ") is negative");
  half_ = rope.rotary_dim / 2;
  first_pos_ = first_pos;
  count_ = count;
  // Every entry is written below; the storage is grown, never shrunk.
  const auto entries = static_cast<std::size_t>(count * half_);
  reused_for_overwrite(cos_, entries);
  reused_for_overwrite(sin_, entries);
  if (half_ == 0) return;
  const std::shared_ptr<const std::vector<double>> inv_freq = inv_freqs(rope);
  if (pool == nullptr) {
    fill(inv_freq->data(), 0, count);
    return;
  }
  const std::int64_t tasks = (count + kTablePositionsPerTask - 1) / kTablePositionsPerTask;
  pool->parallel_for(tasks, [&](std::int64_t task, int) {
    const std::int64_t begin = task * kTablePositionsPerTask;
    fill(inv_freq->data(), begin, std::min(count, begin + kTablePositionsPerTask));
  });
}

void rope_rotate(const float* src, float* dst, int head_dim, int half, const float* cos,
                 const float* sin) {
  // Iteration i reads src[i], src[i + half] and writes dst[i], dst[i + half] only, so dst == src
  // is safe; the loop has no branches and vectorises (with a runtime alias check).
  for (int i = 0; i < half; ++i) {
    const float a = src[i];
    const float b = src[i + half];
    const float c = cos[i];
    const float s = sin[i];
    dst[i] = a * c - b * s;
    dst[i + half] = b * c + a * s;
  }
  if (dst != src) {
    for (int d = 2 * half; d < head_dim; ++d) dst[d] = src[d];
  }
}

void rope_apply(std::span<float> x, std::int64_t tokens, int heads, int head_dim,
                std::int64_t first_pos, const RopeConfig& rope, WorkerPool& pool) {
  validate_rope(rope, head_dim, "rope_apply");
  if (tokens < 0) fail("rope_apply: tokens (", tokens, ") is negative");
  if (heads <= 0) fail("rope_apply: heads (", heads, ") must be positive");
  if (first_pos < 0) fail("rope_apply: first_pos (", first_pos, ") is negative");
  const std::int64_t need = tokens * heads * head_dim;
  if (static_cast<std::int64_t>(x.size()) != need) {
    fail("rope_apply: x.size() (", x.size(), ") != tokens * heads * head_dim (", need, ")");
  }
  if (tokens == 0 || rope.rotary_dim == 0) return;
  const RopeTable table(rope, first_pos, tokens, pool);
  const int half = table.half();
  const std::int64_t tasks = (tokens + kRopeTokensPerTask - 1) / kRopeTokensPerTask;
  pool.parallel_for(tasks, [&](std::int64_t task, int) {
    const std::int64_t t_end = std::min(tokens, (task + 1) * kRopeTokensPerTask);
    for (std::int64_t t = task * kRopeTokensPerTask; t < t_end; ++t) {
      const float* c = table.cos_at(first_pos + t);
      const float* s = table.sin_at(first_pos + t);
      for (int h = 0; h < heads; ++h) {
        float* row = x.data() + (t * heads + h) * head_dim;
        rope_rotate(row, row, head_dim, half, c, s);
      }
    }
  });
}

}  // namespace k3k
