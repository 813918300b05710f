// Attention decode: a task is (kv head, chunk of context positions, cut as decode_chunks says)
// serving every query head of the kv head's group; the per-chunk partials (max, sum, accumulator)
// are merged per query head in ascending chunk order. chunk changes the rounding of the result; the
// worker count does not.
#include <optional>

#include "common/attention_checks.h"
#include "common/query_rope_table.h"
#include "drivers/drivers.h"

namespace k3k::driver {

using detail::fail;

void attention_decode(const ukernel::AttentionDecode& uk, const KvCache& cache,
                      std::span<const float> q, int n_q_heads, std::span<float> out,
                      WorkerPool& pool, const DecodeTiling& tiling, float scale) {
  const char* op = "attention_decode";
  validate(tiling, op);
  detail::check_attention_args(cache, q.size(), out.size(), 1, n_q_heads, scale, op);
  if (cache.length() < 1) {
    fail(op, ": cache.length() is 0; append the query token's K/V to the cache first");
  }

  const int hd = cache.head_dim();
  const int n_kv = cache.n_kv_heads();
  const int group = n_q_heads / n_kv;
  const float sc = scale > 0.0f ? scale : default_attention_scale(hd);
  const std::int64_t pos = cache.length() - 1;
  const std::int64_t lo = cache.first_visible();
  const std::int64_t context = pos + 1 - lo;
  const int chunk = tiling.chunk;
  const DecodeChunks chunks = decode_chunks(context, chunk);
  const std::int64_t n_chunks = chunks.count;
  const int longest = static_cast<int>(chunks.longest);
  const bool f16 = cache.dtype() == KvDtype::f16;

  // The calling thread's buffers, kept between calls (a decode step calls this once per layer;
  // allocating and zeroing them was a tenth of a call): every element is written before it is
  // read (each (query head, chunk) partial by its chunk's task).
  thread_local AlignedBuffer<float> qs_buffer, part_buffer, scratch_buffer;
  auto at_least = [](AlignedBuffer<float>& b, std::int64_t n) {
    return reused_for_overwrite(b, static_cast<std::size_t>(n)).data();
  };
  // Rotated and scaled queries of every head (n_q_heads * head_dim values: not worth a task).
  float* const qs = at_least(qs_buffer, std::int64_t(n_q_heads) * hd);
  {
    std::optional<RopeTable> own_table;
    const RopeTable& table = detail::query_rope_table(cache, pos, 1, nullptr, own_table);
    for (int h = 0; h < n_q_heads; ++h) {
      uk.rotate_scale_q(q.data() + static_cast<std::int64_t>(h) * hd,
                        qs + static_cast<std::int64_t>(h) * hd, hd, table.half(), table.cos_at(pos),
                        table.sin_at(pos), sc);
    }
  }

  // Partial results per (query head, chunk): max, sum and unnormalised accumulator.
  const std::int64_t n_part = n_q_heads * n_chunks;
  float* const part_m = at_least(part_buffer, n_part * (2 + hd));
  float* const part_l = part_m + n_part;
  float* const part_acc = part_l + n_part;
  // Per-worker scratch: scores of the group against the chunk, a gathered K row (layers that read
  // keys one at a time) and a converted V row (fp16).
  using detail::scratch_stride;
  const std::int64_t off_kb = scratch_stride(static_cast<std::int64_t>(group) * longest);
  const std::int64_t off_vb = off_kb + scratch_stride(hd);
  const std::int64_t stride = off_vb + (f16 ? scratch_stride(hd) : 0);
  float* const scratch = at_least(scratch_buffer, stride * pool.size());

  pool.parallel_for(n_kv * n_chunks, [&](std::int64_t task, int worker) {
    const int g = static_cast<int>(task / n_chunks);
    const std::int64_t c = task % n_chunks;
    const std::int64_t c0 = lo + c * chunk;
    float* s = scratch + worker * stride;
    const std::int64_t first =
        static_cast<std::int64_t>(g) * group * n_chunks + c;  // (head g*group, chunk c)
    uk.chunk({&cache, g, c0, static_cast<int>(chunks.size(c, context, chunk)), group,
              qs + static_cast<std::int64_t>(g) * group * hd, s, longest, s + off_kb, s + off_vb,
              part_m + first, part_l + first, part_acc + first * hd, n_chunks,
              tiling.prefetch_bytes});
  });

  pool.parallel_for(n_q_heads, [&](std::int64_t h, int) {
    const std::int64_t base = h * n_chunks;
    uk.merge(part_acc + base * hd, part_m + base, part_l + base, n_chunks, hd, out.data() + h * hd);
  });
}

}  // namespace k3k::driver
