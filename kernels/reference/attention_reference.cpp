#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>
#include <stdexcept>

#include "k3k/fp16.h"
#include "k3k/reference/attention.h"
#include "k3k/rounding.h"
#include "reference_checks.h"

namespace k3k::reference {

namespace {

using detail::fail;

std::int64_t ceil_div(std::int64_t a, std::int64_t b) {
  return (a + b - 1) / b;
}

}  // namespace

// ---- RefKvCache -------------------------------------------------------------------------------

RefKvCache::RefKvCache(const KvCacheConfig& config) : config_(config) {
  if (config.n_kv_heads <= 0)
    fail("RefKvCache: n_kv_heads (", config.n_kv_heads, ") must be positive");
  if (config.head_dim <= 0) fail("RefKvCache: head_dim (", config.head_dim, ") must be positive");
  if (config.capacity <= 0) fail("RefKvCache: capacity (", config.capacity, ") must be positive");
  validate_rope(config.rope, config.head_dim, "RefKvCache");
  const auto n = static_cast<std::size_t>(static_cast<std::int64_t>(config.n_kv_heads) *
                                          config.capacity * config.head_dim);
  k_.assign(n, 0.0);
  k_abs_.assign(n, 0.0);
  v_.assign(n, 0.0);
}

std::size_t RefKvCache::offset(int head, std::int64_t pos) const {
  if (head < 0 || head >= config_.n_kv_heads || pos < first_visible() || pos >= length_) {
    std::ostringstream os;
    os << "RefKvCache: (head " << head << ", position " << pos << ") is not stored (visible ["
       << first_visible() << ", " << length_ << "))";
    throw std::out_of_range(os.str());
  }
  const std::int64_t slot = config_.ring ? pos % config_.capacity : pos;
  return static_cast<std::size_t>((static_cast<std::int64_t>(head) * config_.capacity + slot) *
                                  config_.head_dim);
}

void RefKvCache::append(std::span<const float> k, std::span<const float> v, std::int64_t tokens) {
  const int hd = config_.head_dim;
  const int nh = config_.n_kv_heads;
  const std::int64_t need = tokens * nh * hd;
  if (tokens < 0) fail("RefKvCache::append: tokens (", tokens, ") is negative");
  if (static_cast<std::int64_t>(k.size()) != need || static_cast<std::int64_t>(v.size()) != need) {
    fail("RefKvCache::append: k.size() (", k.size(), ") / v.size() (", v.size(),
         ") != tokens * n_kv_heads * head_dim (", need, ")");
  }
  if (config_.ring ? tokens > config_.capacity : length_ + tokens > config_.capacity) {
    fail("RefKvCache::append: tokens (", tokens, ") do not fit (length ", length_, ", capacity ",
         config_.capacity, ")");
  }
  for (std::int64_t t = 0; t < tokens; ++t) {
    const std::int64_t pos = length_ + t;
    const std::int64_t slot = config_.ring ? pos % config_.capacity : pos;
    for (int h = 0; h < nh; ++h) {
      const std::int64_t src = (t * nh + h) * hd;
      const auto dst =
          static_cast<std::size_t>((static_cast<std::int64_t>(h) * config_.capacity + slot) * hd);
      rope_rotate(config_.rope, pos, k.data() + src, hd, k_.data() + dst, k_abs_.data() + dst);
      for (int d = 0; d < hd; ++d) {
        const float x = v[static_cast<std::size_t>(src + d)];
        v_[dst + static_cast<std::size_t>(d)] =
            config_.dtype == KvDtype::f16 ? fp16_to_fp32(fp32_to_fp16(x)) : x;
      }
    }
  }
  length_ += tokens;
}

// ---- error models -----------------------------------------------------------------------------

namespace {
// The longest chunk decode_chunks can make of any context.
std::int64_t decode_chunks_longest(const DecodeTiling& tiling) {
  return std::int64_t(tiling.chunk) + tiling.chunk / 2;
}

std::int64_t generic_dot_depth(int head_dim) {
  std::int64_t levels = 0;
  for (int w = kGenericReductionLanes; w > 1; w /= 2) ++levels;
  return ceil_div(head_dim, kGenericReductionLanes) + levels;
}
}  // namespace

AttentionErrorModel generic_prefill_error_model(int head_dim, const AttentionTiling& tiling) {
  return {generic_dot_depth(head_dim), tiling.kv_block};
}

AttentionErrorModel generic_decode_error_model(int head_dim, const DecodeTiling& tiling) {
  return {generic_dot_depth(head_dim), tiling.chunk, decode_chunks_longest(tiling)};
}

std::int64_t rvv_dot_depth(std::int64_t n, int vlenb) {
  if (vlenb < 16 || (vlenb & (vlenb - 1)) != 0) {
    fail("reference::rvv_dot_depth: vlenb (", vlenb, ") must be a power of two >= 16");
  }
  if (n < 1) fail("reference::rvv_dot_depth: n (", n, ") must be positive");
  return ceil_div(n, vlenb) + 2 + vlenb / 4;
}

std::int64_t rvv_score_depth(int head_dim) {
  if (head_dim < 1) fail("reference::rvv_score_depth: head_dim (", head_dim, ") must be positive");
  constexpr std::int64_t kBlock = 16;  // dims per fma chain (rvv/key_scores.h kScoreDimBlock)
  return std::min<std::int64_t>(head_dim, kBlock) + ceil_div(head_dim, kBlock) - 1;
}

AttentionErrorModel rvv_prefill_error_model(int head_dim, const AttentionTiling& tiling) {
  return {rvv_score_depth(head_dim), tiling.kv_block};
}

AttentionErrorModel rvv_decode_error_model(int head_dim, const DecodeTiling& tiling) {
  return {rvv_score_depth(head_dim), tiling.chunk, decode_chunks_longest(tiling)};
}

// ---- attention --------------------------------------------------------------------------------
//
// Error bound for one output vector o (query row against keys j = 1..T), per component d.
// u = 2^-24, gamma_n = n u / (1 - n u) (Higham ch. 3). Exact quantities: q, k_j = exact double
// rotations of the float inputs; qa, ka_j their rotation magnitudes (|q| <= qa, |k_j| <= ka_j
// componentwise, see rope_rotate); v_j the stored V (exact); s_j = scale q.k_j; w_j the softmax of
// s; o_d = sum_j w_j v_jd. The kernel is assumed to follow AttentionErrorModel: each score a dot
// product of depth D_dot; keys summed in blocks of B from zero, at most NB = ceil(T/B) blocks
// merged by online-softmax rescaling (or, for decode, chunks merged in order, same counts), the
// longest block L keys (L = B, or decode's last chunk with its remainder: up to B + B/2).
//
// 1. Scores. Kernel q^ = rotated q with |q^ - q| <= gamma_3 qa (see rope_component_bound),
//    scaled by fl(scale) with one more rounding: q_s = scale q^ (1+theta_2). Stored k^ with
//    |k^ - k| <= E_k = alpha ka + beta |k| + a_k: fp32 alpha = gamma_3, beta = a_k = 0; fp16 also
//    rounds the float-rotated value to binary16 (<= u16 |k^| + 2^-25 with the subnormal
//    half-spacing), alpha = gamma_3 (1 + u16), beta = u16, a_k = 2^-25. With the magnitude bounds
//    Qa = |q| + gamma_3 qa >= |q^| and Ka = |k| + E_k >= |k^|:
//      |fl(q_s.k^) - q_s.k^| <= gamma_{D_dot} sum |q_s||k^| <= gamma_{D_dot}(1+gamma_2) scale sum
//      Qa Ka |q_s.k^ - scale q.k| <= scale (gamma_2 sum Qa Ka + sum (gamma_3 qa Ka + |q| E_k)),
//    so |s^_j - s_j| <= delta_j = scale (c1 sum Qa Ka + sum (gamma_3 qa Ka + |q| E_k)),
//    c1 = (1+gamma_{D_dot})(1+gamma_2) - 1. (The dominant dot-product term is relative to
//    sum |q||k|, the rotation terms to the rotation magnitudes.) Sums are over the head dim and
//    are formed from S_qk = sum|q||k|, S_qK = sum|q| ka, S_Qk = sum qa |k|, S_QK = sum qa ka.
// 2. Softmax weights. The kernel's unnormalised weight of key j is exp(s_j - M) e^{rho_j} times a
//    factor common to all keys (which cancels in o = acc / l). rho_j collects:
//      - the score error, |.| <= delta_j;
//      - the rounding of the exponent arguments fl(s^_j - m_b) and of every later rescale
//        argument fl(m_old - m_new): the running max only grows and m_b >= s^_j, so these
//        telescope to <= u (M^ - s^_j) <= u (M - s_j + 2 max_k delta_k);
//      - expf rounding (assumed faithful, < 1 ulp: relative <= 2u, i.e. an exponent change
//        <= gamma_2) of p_j and of each rescale factor applied after it: <= (NB + 1) gamma_2.
//    So |rho_j| <= P_j = delta_j + u (M - s_j + 2 max delta) + (NB + 1) gamma_2. The normalised
//    weights w^_j = w_j e^{rho_j} / sum_k w_k e^{rho_k} satisfy (Jensen for the lower side,
//    e^x - 1 <= x e^x for the upper)
//       |w^_j - w_j| <= w_j (P_j + P~) e^{P_j + P~},   P~ = sum_k w_k P_k e^{P_k},
//    which gives the term  W_d = sum_j w_j |v_jd| (P_j + P~) e^{P_j + P~}.
//    (A score perturbation delta alone gives the familiar ~2 delta relative weight change.)
// 3. Accumulation. Each term p_j v_jd (and p_j in l) goes through at most
//    A = min(L, T) + 2 NB + 2 roundings: its product, the in-block sum, the merge addition and one
//    multiply + one add per later merge. With acc^ = sum p_j v_j (1+theta_A) and
//    l^ = l (1+theta_A) (positive terms), o^ = fl(acc^ / l^) is within
//    gamma_{2A+1} sum_j w^_j |v_jd| <= gamma_{2A+1} (sum_j w_j |v_jd| + W_d) of sum_j w^_j v_jd.
// 4. Underflow: exp results and products below 2^-126 carry absolute errors <= 2^-149 each instead
//    of relative ones (l >= ~1 since the max key contributes exp(0)); at most 4T + 8NB + 8 such
//    events touch one component, each <= 2^-149 (max_j |v_jd| + 1).
// The float64 reference itself is accurate to ~1e-15 relative, far below every term.
// bound_d = W_d + gamma_{2A+1} (sum_j w_j |v_jd| + W_d) + (4T + 8NB + 8) 2^-149 (max_j |v_jd| + 1).

namespace {

struct RowScratch {
  std::vector<double> q, qa, s, delta, w, p;  // per head dim / per key
  std::vector<double> o, absw, W, vmax;       // per head dim accumulators
};

void attention_row(const RefKvCache& cache, const float* q_in, std::int64_t q_pos, int kv_head,
                   std::int64_t key_lo, std::int64_t key_hi, double scale,
                   const AttentionErrorModel& model, double* out, double* bound, RowScratch& r) {
  const KvCacheConfig& cfg = cache.config();
  const int hd = cfg.head_dim;
  const auto uhd = static_cast<std::size_t>(hd);
  const std::int64_t T = key_hi - key_lo + 1;
  const auto uT = static_cast<std::size_t>(T);
  r.q.resize(uhd);
  r.qa.resize(uhd);
  r.o.resize(uhd);
  r.absw.resize(uhd);
  r.W.resize(uhd);
  r.vmax.resize(uhd);
  r.s.resize(uT);
  r.delta.resize(uT);
  r.w.resize(uT);
  r.p.resize(uT);
  rope_rotate(cfg.rope, q_pos, q_in, hd, r.q.data(), r.qa.data());

  const double u = kUnitRoundoffF32;
  const bool f16 = cfg.dtype == KvDtype::f16;
  const double g3 = gamma_f32(3);
  const double alpha = f16 ? g3 * (1.0 + kUnitRoundoffF16) : g3;
  const double beta = f16 ? kUnitRoundoffF16 : 0.0;
  const double a_k = f16 ? 0x1.0p-25 : 0.0;
  const double c1 =
      (1.0 + gamma_f32(static_cast<double>(model.dot_depth))) * (1.0 + gamma_f32(2)) - 1.0;
  double q_sum = 0.0, qa_sum = 0.0;
  for (std::size_t d = 0; d < uhd; ++d) {
    q_sum += std::fabs(r.q[d]);
    qa_sum += r.qa[d];
  }

  double M = -std::numeric_limits<double>::infinity();
  double dmax = 0.0;
  for (std::int64_t j = 0; j < T; ++j) {
    const double* k = cache.k(kv_head, key_lo + j);
    const double* ka = cache.k_abs(kv_head, key_lo + j);
    double dot = 0.0, s_qk = 0.0, s_qK = 0.0, s_Qk = 0.0, s_QK = 0.0;
    for (int d = 0; d < hd; ++d) {
      const auto ud = static_cast<std::size_t>(d);
      const double aq = std::fabs(r.q[ud]), ak = std::fabs(k[d]);
      dot += r.q[ud] * k[d];
      s_qk += aq * ak;
      s_qK += aq * ka[d];
      s_Qk += r.qa[ud] * ak;
      s_QK += r.qa[ud] * ka[d];
    }
    // sum Qa Ka, sum qa Ka and sum |q| E_k expanded over Ka = (1+beta)|k| + alpha ka + a_k.
    const double sum_q_Ka = (1.0 + beta) * s_qk + alpha * s_qK + a_k * q_sum;
    const double sum_qa_Ka = (1.0 + beta) * s_Qk + alpha * s_QK + a_k * qa_sum;
    const double sum_Qa_Ka = sum_q_Ka + g3 * sum_qa_Ka;
    const double sum_q_Ek = beta * s_qk + alpha * s_qK + a_k * q_sum;
    const auto uj = static_cast<std::size_t>(j);
    r.s[uj] = scale * dot;
    r.delta[uj] = scale * (c1 * sum_Qa_Ka + g3 * sum_qa_Ka + sum_q_Ek);
    M = std::max(M, r.s[uj]);
    dmax = std::max(dmax, r.delta[uj]);
  }
  double Z = 0.0;
  for (std::size_t j = 0; j < uT; ++j) {
    r.w[j] = std::exp(r.s[j] - M);
    Z += r.w[j];
  }
  for (std::size_t j = 0; j < uT; ++j) r.w[j] /= Z;

  const std::int64_t B = model.block;
  const std::int64_t NB = ceil_div(T, B);
  const double exp_terms = static_cast<double>(NB + 1) * gamma_f32(2);
  double p_tilde = 0.0;
  for (std::size_t j = 0; j < uT; ++j) {
    r.p[j] = r.delta[j] + u * (M - r.s[j] + 2.0 * dmax) + exp_terms;
    p_tilde += r.w[j] * r.p[j] * std::exp(r.p[j]);
  }
  const std::int64_t longest = model.longest_block > 0 ? model.longest_block : B;
  const double A = static_cast<double>(std::min(longest, T) + 2 * NB + 2);
  const double g_acc = gamma_f32(2.0 * A + 1.0);
  const double underflow = static_cast<double>(4 * T + 8 * NB + 8) * 0x1.0p-149;

  std::fill(r.o.begin(), r.o.end(), 0.0);
  std::fill(r.absw.begin(), r.absw.end(), 0.0);
  std::fill(r.W.begin(), r.W.end(), 0.0);
  std::fill(r.vmax.begin(), r.vmax.end(), 0.0);
  for (std::int64_t j = 0; j < T; ++j) {
    const auto uj = static_cast<std::size_t>(j);
    const double* v = cache.v(kv_head, key_lo + j);
    const double wj = r.w[uj];
    const double pj = r.p[uj] + p_tilde;
    const double fj = wj * pj * std::exp(pj);
    for (std::size_t d = 0; d < uhd; ++d) {
      const double av = std::fabs(v[d]);
      r.o[d] += wj * v[d];
      r.absw[d] += wj * av;
      r.W[d] += fj * av;
      r.vmax[d] = std::max(r.vmax[d], av);
    }
  }
  for (std::size_t d = 0; d < uhd; ++d) {
    out[d] = r.o[d];
    bound[d] = r.W[d] + g_acc * (r.absw[d] + r.W[d]) + underflow * (r.vmax[d] + 1.0);
  }
}

void check_reference_args(const RefKvCache& cache, std::size_t q_size, std::int64_t tokens,
                          int n_q_heads, const AttentionErrorModel& model, const char* op) {
  const KvCacheConfig& cfg = cache.config();
  if (n_q_heads <= 0 || n_q_heads % cfg.n_kv_heads != 0) {
    fail(op, ": n_q_heads (", n_q_heads, ") is not a positive multiple of n_kv_heads (",
         cfg.n_kv_heads, ")");
  }
  if (tokens < 1 || tokens > cache.length() || (cfg.ring && tokens > cfg.capacity)) {
    fail(op, ": tokens (", tokens, ") must be in [1, cache length (", cache.length(), ")]");
  }
  if (static_cast<std::int64_t>(q_size) != tokens * n_q_heads * cfg.head_dim) {
    fail(op, ": q.size() (", q_size, ") != tokens * n_q_heads * head_dim");
  }
  if (model.dot_depth < 1 || model.block < 1) {
    fail(op, ": model.dot_depth (", model.dot_depth, ") and model.block (", model.block,
         ") must be positive");
  }
}

AttentionReference attention_rows(const RefKvCache& cache, std::span<const float> q,
                                  std::int64_t tokens, int n_q_heads,
                                  const AttentionErrorModel& model, double scale,
                                  const AttentionReferenceOptions& options, const char* op) {
  check_reference_args(cache, q.size(), tokens, n_q_heads, model, op);
  const KvCacheConfig& cfg = cache.config();
  const int hd = cfg.head_dim;
  const int group = n_q_heads / cfg.n_kv_heads;
  if (!(scale > 0.0)) scale = 1.0 / std::sqrt(static_cast<double>(hd));
  const std::int64_t first_pos = cache.length() - tokens;
  const std::int64_t lo = cache.first_visible();
  AttentionReference result;
  result.out.resize(q.size());
  result.bound.resize(q.size());
  RowScratch scratch;
  for (std::int64_t t = 0; t < tokens; ++t) {
    const std::int64_t pos = first_pos + t;
    const std::int64_t hi = options.causal ? pos : cache.length() - 1;
    for (int h = 0; h < n_q_heads; ++h) {
      const int g = options.interleaved_gqa ? h % cfg.n_kv_heads : h / group;
      const std::int64_t off = (t * n_q_heads + h) * hd;
      attention_row(cache, q.data() + off, pos, g, lo, hi, scale, model, result.out.data() + off,
                    result.bound.data() + off, scratch);
    }
  }
  return result;
}

}  // namespace

AttentionReference attention_prefill(const RefKvCache& cache, std::span<const float> q,
                                     std::int64_t tokens, int n_q_heads,
                                     const AttentionErrorModel& model, double scale,
                                     const AttentionReferenceOptions& options) {
  return attention_rows(cache, q, tokens, n_q_heads, model, scale, options,
                        "reference::attention_prefill");
}

AttentionReference attention_decode(const RefKvCache& cache, std::span<const float> q,
                                    int n_q_heads, const AttentionErrorModel& model, double scale,
                                    const AttentionReferenceOptions& options) {
  return attention_rows(cache, q, 1, n_q_heads, model, scale, options,
                        "reference::attention_decode");
}

std::vector<double> attention_prefill_bound(const RefKvCache& cache, std::span<const float> q,
                                            std::int64_t tokens, int n_q_heads,
                                            const AttentionErrorModel& model, double scale) {
  return attention_prefill(cache, q, tokens, n_q_heads, model, scale).bound;
}

std::vector<double> attention_decode_bound(const RefKvCache& cache, std::span<const float> q,
                                           int n_q_heads, const AttentionErrorModel& model,
                                           double scale) {
  return attention_decode(cache, q, n_q_heads, model, scale).bound;
}

}  // namespace k3k::reference
