// Gated DeltaNet recurrence drivers. Prefill walks the tokens in chunks; per chunk, phase A (one
// task per value head) forms the decay factors from double cumulative sums of g (each factor
// rounded once to float, the same code for every layer), the chunk's C x C key-key and query-key
// products with the layer's dot, and the keys decayed to the chunk end; phase B (one task per
// value head and block of value columns) runs the layer's chunk microkernel on its columns of the
// state. Decode is a chunk of one token per (value head, column block). Every output and state
// element is computed by one task in a fixed order: bitwise identical for any worker count and
// column block width.
#include <algorithm>
#include <cmath>
#include <span>

#include "common/checks.h"
#include "common/deltanet_checks.h"
#include "drivers/drivers.h"
#include "k3k/aligned_buffer.h"

namespace k3k::driver {
namespace {

using detail::scratch_stride;

// Phase A's results for one value head and chunk, in one block of `floats()` floats.
struct ChunkPrep {
  int chunk = 0, k_dim = 0;
  std::int64_t e_off() const { return 0; }
  std::int64_t beta_off() const { return scratch_stride(chunk); }
  std::int64_t kk_off() const { return beta_off() + scratch_stride(chunk); }
  std::int64_t qk_off() const { return kk_off() + scratch_stride(std::int64_t(chunk) * chunk); }
  std::int64_t khat_off() const { return qk_off() + scratch_stride(std::int64_t(chunk) * chunk); }
  std::int64_t floats() const { return khat_off() + scratch_stride(std::int64_t(chunk) * k_dim); }
};

// The chunk's per-head quantities; returns a_end = float(exp(G_last)).
float prepare_chunk(const ukernel::GatedDeltaNet& uk, const GdnDims& d, const GdnInputs& in,
                    std::int64_t c0, int cn, int h, const ChunkPrep& lay, float* p) {
  const int hv = d.v_heads, dk = d.k_dim, kh = h / (d.v_heads / d.k_heads);
  double G[1024];  // chunk <= 1024 (validated)
  double cum = 0.0;
  for (int t = 0; t < cn; ++t) {
    cum += static_cast<double>(in.g[(c0 + t) * hv + h]);
    G[t] = cum;
  }
  float* e = p + lay.e_off();
  float* beta = p + lay.beta_off();
  float* kk = p + lay.kk_off();
  float* qk = p + lay.qk_off();
  float* khat = p + lay.khat_off();
  const std::int64_t ld = lay.chunk;
  for (int t = 0; t < cn; ++t) {
    e[t] = static_cast<float>(std::exp(G[t]));
    beta[t] = in.beta[(c0 + t) * hv + h];
    const float* kt = in.k + (c0 + t) * in.k_stride + std::int64_t(kh) * dk;
    const float* qt = in.q + (c0 + t) * in.q_stride + std::int64_t(kh) * dk;
    for (int s = 0; s <= t; ++s) {
      const float* ks = in.k + (c0 + s) * in.k_stride + std::int64_t(kh) * dk;
      const float decay = static_cast<float>(std::exp(G[t] - G[s]));
      if (s < t) kk[t * ld + s] = decay * uk.dot(kt, ks, dk);
      qk[t * ld + s] = decay * uk.dot(qt, ks, dk);
    }
    const float f = static_cast<float>(std::exp(G[cn - 1] - G[t]));
    for (int i = 0; i < dk; ++i) khat[std::int64_t(t) * dk + i] = f * kt[i];
  }
  return static_cast<float>(std::exp(G[cn - 1]));
}

}  // namespace

void gdn_prefill(const ukernel::GatedDeltaNet& uk, const GdnDims& d, std::int64_t tokens,
                 const GdnInputs& in, std::span<float> state, std::span<float> out,
                 WorkerPool& pool, const GdnPrefillTiling& tiling) {
  detail::check_gdn("gdn_prefill", d, tokens, in, state, out);
  validate(tiling, "gdn_prefill");
  if (tokens == 0) return;
  const int chunk = static_cast<int>(std::min<std::int64_t>(tiling.chunk, tokens));
  const int cols = std::min(tiling.columns, d.v_dim);
  const int col_blocks = (d.v_dim + cols - 1) / cols;
  const int hv = d.v_heads, dk = d.k_dim, dv = d.v_dim;
  const ChunkPrep lay{chunk, dk};
  // The calling thread's buffers, kept between calls and zeroed as a new allocation was.
  thread_local AlignedBuffer<float> prep_buffer, a_end_buffer, scratch_buffer;
  const std::span<float> prep =
      reused_zeroed(prep_buffer, static_cast<std::size_t>(lay.floats() * hv));
  const std::span<float> a_end = reused_zeroed(a_end_buffer, static_cast<std::size_t>(hv));
  const std::int64_t scratch_floats = scratch_stride(3 * std::int64_t(chunk) * cols);
  const std::span<float> scratch =
      reused_zeroed(scratch_buffer, static_cast<std::size_t>(scratch_floats * pool.size()));
  const std::int64_t v_row = std::int64_t(hv) * dv;
  for (std::int64_t c0 = 0; c0 < tokens; c0 += chunk) {
    const int cn = static_cast<int>(std::min<std::int64_t>(chunk, tokens - c0));
    pool.parallel_for(hv, [&](std::int64_t h, int) {
      a_end[static_cast<std::size_t>(h)] = prepare_chunk(uk, d, in, c0, cn, static_cast<int>(h),
                                                         lay, prep.data() + h * lay.floats());
    });
    pool.parallel_for(std::int64_t(hv) * col_blocks, [&](std::int64_t task, int worker) {
      const int h = static_cast<int>(task / col_blocks);
      const int j0 = static_cast<int>(task % col_blocks) * cols;
      const int kh = h / (hv / d.k_heads);
      const float* p = prep.data() + h * lay.floats();
      ukernel::GdnChunk c;
      c.tokens = cn;
      c.k_dim = dk;
      c.cols = std::min(cols, dv - j0);
      c.q = in.q + c0 * in.q_stride + std::int64_t(kh) * dk;
      c.q_stride = in.q_stride;
      c.k = in.k + c0 * in.k_stride + std::int64_t(kh) * dk;
      c.k_stride = in.k_stride;
      c.v = in.v + c0 * in.v_stride + std::int64_t(h) * dv + j0;
      c.v_stride = in.v_stride;
      c.beta = p + lay.beta_off();
      c.e = p + lay.e_off();
      c.kk = p + lay.kk_off();
      c.qk = p + lay.qk_off();
      c.ld = chunk;
      c.khat = p + lay.khat_off();
      c.a_end = a_end[static_cast<std::size_t>(h)];
      c.state = state.data() + std::int64_t(h) * dk * dv + j0;
      c.state_stride = dv;
      c.out = out.data() + c0 * v_row + std::int64_t(h) * dv + j0;
      c.out_stride = v_row;
      c.scratch = scratch.data() + worker * scratch_floats;
      uk.chunk_columns(c);
    });
  }
}

void gdn_decode(const ukernel::GatedDeltaNet& uk, const GdnDims& d, const GdnInputs& in,
                std::span<float> state, std::span<float> out, WorkerPool& pool,
                const GdnDecodeTiling& tiling) {
  detail::check_gdn("gdn_decode", d, 1, in, state, out);
  validate(tiling, "gdn_decode");
  const int cols = std::min(tiling.columns, d.v_dim);
  const int col_blocks = (d.v_dim + cols - 1) / cols;
  const int hv = d.v_heads, dk = d.k_dim, dv = d.v_dim;
  const std::int64_t scratch_floats = scratch_stride(3 * std::int64_t(cols));
  thread_local AlignedBuffer<float> scratch_buffer;  // kept between calls, zeroed each
  const std::span<float> scratch =
      reused_zeroed(scratch_buffer, static_cast<std::size_t>(scratch_floats * pool.size()));
  pool.parallel_for(std::int64_t(hv) * col_blocks, [&](std::int64_t task, int worker) {
    const int h = static_cast<int>(task / col_blocks);
    const int j0 = static_cast<int>(task % col_blocks) * cols;
    const int kh = h / (hv / d.k_heads);
    const float* q = in.q + std::int64_t(kh) * dk;
    const float* k = in.k + std::int64_t(kh) * dk;
    const float a = static_cast<float>(std::exp(static_cast<double>(in.g[h])));
    const float qk = uk.dot(q, k, dk);
    ukernel::GdnChunk c;
    c.tokens = 1;
    c.k_dim = dk;
    c.cols = std::min(cols, dv - j0);
    c.q = q;
    c.q_stride = in.q_stride;
    c.k = k;
    c.k_stride = in.k_stride;
    c.v = in.v + std::int64_t(h) * dv + j0;
    c.v_stride = in.v_stride;
    c.beta = in.beta + h;
    c.e = &a;
    c.kk = nullptr;
    c.qk = &qk;
    c.ld = 1;
    c.khat = k;
    c.a_end = a;
    c.state = state.data() + std::int64_t(h) * dk * dv + j0;
    c.state_stride = dv;
    c.out = out.data() + std::int64_t(h) * dv + j0;
    c.out_stride = std::int64_t(hv) * dv;
    c.scratch = scratch.data() + worker * scratch_floats;
    uk.chunk_columns(c);
  });
}

}  // namespace k3k::driver
