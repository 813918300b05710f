#include <algorithm>
#include <cmath>
#include <limits>

#include "attention_common.h"
#include "k3k/attention.h"
#include "vec_math.h"

namespace k3k {

using generic_detail::fail;

void validate(const DecodeTiling& tiling, const char* op) {
  if (tiling.chunk < 1 || tiling.chunk > 1 << 20) {
    fail(op, ": tiling.chunk (", tiling.chunk, ") must be in [1, 1048576]");
  }
}

namespace generic {
void attention_decode(const KvCache& cache, std::span<const float> q, int n_q_heads,
                      std::span<float> out, WorkerPool& pool, const DecodeTiling& tiling,
                      float scale) {
  const char* op = "attention_decode";
  validate(tiling, op);
  generic_detail::check_attention_args(cache, q.size(), out.size(), 1, n_q_heads, scale, op);
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
  const int chunk = static_cast<int>(std::min<std::int64_t>(tiling.chunk, context));
  const std::int64_t n_chunks = (context + chunk - 1) / chunk;
  const bool f16 = cache.dtype() == KvDtype::f16;

  // Rotated and scaled queries of every head (n_q_heads * head_dim values: not worth a task).
  AlignedBuffer<float> qs(static_cast<std::size_t>(n_q_heads) * hd);
  {
    const RopeTable table(cache.rope(), pos, 1);
    for (int h = 0; h < n_q_heads; ++h) {
      float* qr = qs.data() + static_cast<std::int64_t>(h) * hd;
      rope_rotate(q.data() + static_cast<std::int64_t>(h) * hd, qr, hd, table.half(),
                  table.cos_at(pos), table.sin_at(pos));
      for (int d = 0; d < hd; ++d) qr[d] *= sc;
    }
  }

  // Partial results per (query head, chunk): max, sum and unnormalised accumulator.
  const std::size_t n_part = static_cast<std::size_t>(n_q_heads * n_chunks);
  AlignedBuffer<float> part_m(n_part), part_l(n_part), part_acc(n_part * hd);
  // Per-worker scratch: scores of the group against the chunk, converted K and V rows (fp16).
  using generic_detail::scratch_stride;
  const std::int64_t off_kb = scratch_stride(static_cast<std::int64_t>(group) * chunk);
  const std::int64_t off_vb = off_kb + (f16 ? scratch_stride(hd) : 0);
  const std::int64_t stride = off_vb + (f16 ? scratch_stride(hd) : 0);
  AlignedBuffer<float> scratch(static_cast<std::size_t>(stride * pool.size()));

  pool.parallel_for(n_kv * n_chunks, [&](std::int64_t task, int worker) {
    const int g = static_cast<int>(task / n_chunks);
    const std::int64_t c = task % n_chunks;
    const std::int64_t c0 = lo + c * chunk;
    const int n = static_cast<int>(std::min<std::int64_t>(chunk, pos + 1 - c0));
    float* s = scratch.data() + worker * stride;
    float* kbuf = s + off_kb;
    float* vbuf = s + off_vb;
    const float* qg = qs.data() + static_cast<std::int64_t>(g) * group * hd;

    for (int j = 0; j < n; ++j) {
      const float* k = generic_detail::k_row(cache, g, c0 + j, kbuf);
      for (int gi = 0; gi < group; ++gi) {
        s[static_cast<std::int64_t>(gi) * chunk + j] =
            generic_detail::dot_lanes(qg + static_cast<std::int64_t>(gi) * hd, k, hd);
      }
    }
    for (int gi = 0; gi < group; ++gi) {
      float* sg = s + static_cast<std::int64_t>(gi) * chunk;
      float m = -std::numeric_limits<float>::infinity();
      for (int j = 0; j < n; ++j) m = std::max(m, sg[j]);
      float l = 0.0f;
      for (int j = 0; j < n; ++j) {
        sg[j] = std::exp(sg[j] - m);
        l += sg[j];
      }
      const std::int64_t idx = static_cast<std::int64_t>(g * group + gi) * n_chunks + c;
      part_m[static_cast<std::size_t>(idx)] = m;
      part_l[static_cast<std::size_t>(idx)] = l;
      float* a = part_acc.data() + idx * hd;
      for (int d = 0; d < hd; ++d) a[d] = 0.0f;
    }
    for (int j = 0; j < n; ++j) {
      const float* v = generic_detail::v_row(cache, g, c0 + j, vbuf);
      for (int gi = 0; gi < group; ++gi) {
        const float p = s[static_cast<std::int64_t>(gi) * chunk + j];
        float* a =
            part_acc.data() + (static_cast<std::int64_t>(g * group + gi) * n_chunks + c) * hd;
        for (int d = 0; d < hd; ++d) a[d] += p * v[d];
      }
    }
  });

  // Merge the chunks of each query head in ascending chunk order (fixed, worker-independent):
  //   m' = max(m, m_c);  acc = acc * exp(m - m') + acc_c * exp(m_c - m');  l likewise.
  pool.parallel_for(n_q_heads, [&](std::int64_t h, int) {
    const std::int64_t base = h * n_chunks;
    float* o = out.data() + h * hd;
    const float* a0 = part_acc.data() + base * hd;
    for (int d = 0; d < hd; ++d) o[d] = a0[d];
    float m = part_m[static_cast<std::size_t>(base)];
    float l = part_l[static_cast<std::size_t>(base)];
    for (std::int64_t c = 1; c < n_chunks; ++c) {
      const float mc = part_m[static_cast<std::size_t>(base + c)];
      const float lc = part_l[static_cast<std::size_t>(base + c)];
      const float* ac = part_acc.data() + (base + c) * hd;
      const float m_new = std::max(m, mc);
      const float alpha = std::exp(m - m_new);
      const float beta = std::exp(mc - m_new);
      for (int d = 0; d < hd; ++d) o[d] = o[d] * alpha + ac[d] * beta;
      l = l * alpha + lc * beta;
      m = m_new;
    }
    for (int d = 0; d < hd; ++d) o[d] = o[d] / l;
  });
}
}  // namespace generic

}  // namespace k3k
