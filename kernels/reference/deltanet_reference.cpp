// The Gated DeltaNet recurrence in double, and the bound of a float kernel that follows
// ukernel::GdnChunk in chunks of C tokens (C = 1: the decode step).
//
// Notation (one value head h, one value column j; u = 2^-24, gamma_n = n u / (1 - n u)): exact
// quantities come from the double recurrence on the float inputs; S~ is the kernel's materialised
// state at a chunk start and E_j a bound on the 2-norm of its column error ||S~[:,j] - S[:,j]||.
//
// 1. One step is non-expansive. Column j evolves as s_t = M_t s_{t-1} + beta_t v_tj k_t with
//    M_t = exp(g_t) (I - beta_t k_t k_t^T), whose spectral norm is
//    rho_t = exp(g_t) max(1, |1 - beta_t |k_t|^2|)  (<= 1 when g <= 0, beta |k|^2 <= 2).
//    An error e in the state therefore leaves the step at most rho_t |e| large.
// 2. The kernel's effective states. Inside a chunk the kernel never forms the states; define them
//    from its computed pseudo-values d~_s: S^_t = D_t S~ + sum_{s<=t} (D_t / D_s) k_s d~_s^T with
//    D_t = exp(G_t). Exactly, S^_t = exp(g_t) S^_{t-1} + k_t d~_t^T, and the kernel's d~_t is the
//    exact step's delta at S^_{t-1} plus a local rounding r_t:
//      d~_t = beta_t (v_t - exp(g_t) k_t^T S^_{t-1}) + r_t,
//    so S^_t = M_t S^_{t-1} + beta_t k_t v_t^T + k_t r_t^T: per column, the distance F_t of S^_t
//    from the exact state obeys F_t <= rho_t F_{t-1} + |k_t|_2 |r_t|, F_{-1} = E.
// 3. The local rounding. The kernel computes W = k^T S~ and R = q^T S~ (k_dim terms each), the
//    C x C products (the layer's dot, dot_depth roundings, times a decay factor), the decays
//    (double cumulative sums of g, each factor rounded once to float: relative error at most
//    u_d = u + 2^-50 + 2 (C + 1) 2^-53 sum|g|, the last term the double sums' own error), then
//      d~_t = fl(beta_t fl((v_t - e_t W_t) - sum_{s<t} kk_ts d~_s))         (t + 2 terms)
//    With n = max(k_dim, dot_depth) and Gam = gamma_{n + C + 8} + 3 u_d, every rounding on the way
//    (product, accumulation, decay factor, final multiply) is inside
//      |r_t| <= Gam beta_t B_t,  B_t = |v_t| + D_t sum_i |k_ti| Sb_i + sum_{s<t} d_ts kkabs_ts db_s
//    where Sb_i = |S_ij| + E_j bounds |S~_ij|, kkabs_ts = sum_i |k_ti||k_si|, d_ts = D_t / D_s and
//    db_s = |delta_s| + Ed_s bounds |d~_s| (Ed_t = r_t + beta_t exp(g_t) |k_t|_2 F_{t-1}).
// 4. Outputs: o~_t = fl(e_t R_t + sum_{s<=t} qk_ts d~_s) differs from q_t^T S^_t by at most
//      Gam (D_t sum_i |q_ti| Sb_i + sum_{s<=t} d_ts qkabs_ts db_s),
//    and q_t^T S^_t from the exact output by at most |q_t|_2 F_t.
// 5. The chunk end: S~_new = fl(a_end S~ + sum_t khat_t d~_t^T) (C + 1 terms, one decay rounding
//    and one khat rounding each) differs from S^_last elementwise by at most
//      GamEnd (D_last Sb_i + sum_t f_t |k_ti| db_t),  GamEnd = gamma_{C + 4} + 2 u_d,
//    and E_new = F_last + the 2-norm of that column. The final state's elementwise bound is E.
// The double reference's own error (~1e-16 relative per step) is far below these terms.
#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "k3k/reference/attention.h"
#include "k3k/reference/deltanet.h"
#include "k3k/rounding.h"

namespace k3k::reference {

GdnErrorModel generic_gdn_error_model(int k_dim, int chunk) {
  return {chunk, (k_dim + kGenericReductionLanes - 1) / kGenericReductionLanes + 4};
}

GdnErrorModel rvv_gdn_error_model(int k_dim, int chunk, int vlenb) {
  return {chunk, rvv_dot_depth(k_dim, vlenb)};
}

namespace {

// One value head's tensors as double rows, for the chunk being bounded.
struct HeadChunk {
  std::vector<double> q, k, qabs, kabs;  // [C][k_dim]
  std::vector<double> qnorm, knorm;      // [C]
};

double norm2(const double* x, int n) {
  double s = 0.0;
  for (int i = 0; i < n; ++i) s += x[i] * x[i];
  return std::sqrt(s);
}

double abs_dot(const double* a, const double* b, int n) {
  double s = 0.0;
  for (int i = 0; i < n; ++i) s += a[i] * b[i];
  return s;
}

}  // namespace

GdnReference gated_deltanet(const GdnDims& dims, std::int64_t tokens, const GdnInputs& in,
                            std::span<const float> state, const GdnErrorModel& model) {
  validate(dims, "reference::gated_deltanet");
  if (tokens < 0 || model.chunk < 1 || model.dot_depth < 1 ||
      static_cast<std::int64_t>(state.size()) != dims.state_floats()) {
    throw std::invalid_argument("reference::gated_deltanet: bad tokens (" +
                                std::to_string(tokens) + "), chunk, dot_depth or state size");
  }
  const int hv = dims.v_heads, dk = dims.k_dim, dv = dims.v_dim;
  const int group = hv / dims.k_heads;
  const double u = kUnitRoundoffF32;
  GdnReference r;
  r.out.assign(static_cast<std::size_t>(tokens * hv * dv), 0.0);
  r.out_bound.assign(r.out.size(), 0.0);
  r.state.assign(state.begin(), state.end());
  r.state_bound.assign(r.state.size(), 0.0);
  const std::size_t sdim = static_cast<std::size_t>(dk) * dv;

  for (int h = 0; h < hv; ++h) {
    const int kh = h / group;
    double* S = r.state.data() + h * sdim;
    std::vector<double> E(static_cast<std::size_t>(dv), 0.0), F(E.size());
    std::vector<double> Sb(sdim);
    for (std::int64_t c0 = 0; c0 < tokens; c0 += model.chunk) {
      const int cn = static_cast<int>(std::min<std::int64_t>(model.chunk, tokens - c0));
      // Chunk constants: cumulative log decays, decay-factor rounding, the rounding budgets.
      std::vector<double> G(static_cast<std::size_t>(cn)), beta(G.size()), gt(G.size());
      double cum = 0.0, sum_abs_g = 0.0;
      for (int t = 0; t < cn; ++t) {
        gt[t] = in.g[(c0 + t) * hv + h];
        beta[t] = in.beta[(c0 + t) * hv + h];
        cum += gt[t];
        sum_abs_g += std::fabs(gt[t]);
        G[t] = cum;
      }
      const double ud = u + 0x1.0p-50 + 2.0 * (cn + 1) * 0x1.0p-53 * sum_abs_g;
      const double n_dot = static_cast<double>(std::max<std::int64_t>(dk, model.dot_depth));
      const double gam = gamma_f32(n_dot + cn + 8) + 3.0 * ud;
      const double gam_end = gamma_f32(cn + 4.0) + 2.0 * ud;

      HeadChunk hc;
      hc.q.resize(static_cast<std::size_t>(cn) * dk);
      hc.k.resize(hc.q.size());
      hc.qabs.resize(hc.q.size());
      hc.kabs.resize(hc.q.size());
      hc.qnorm.resize(static_cast<std::size_t>(cn));
      hc.knorm.resize(hc.qnorm.size());
      for (int t = 0; t < cn; ++t) {
        const float* qt = in.q + (c0 + t) * in.q_stride + kh * dk;
        const float* kt = in.k + (c0 + t) * in.k_stride + kh * dk;
        for (int i = 0; i < dk; ++i) {
          hc.q[t * dk + i] = qt[i];
          hc.k[t * dk + i] = kt[i];
          hc.qabs[t * dk + i] = std::fabs(qt[i]);
          hc.kabs[t * dk + i] = std::fabs(kt[i]);
        }
        hc.qnorm[t] = norm2(&hc.q[t * dk], dk);
        hc.knorm[t] = norm2(&hc.k[t * dk], dk);
      }
      // Magnitudes of the kernel's chunk-start state, and its products with |q|, |k|.
      for (int i = 0; i < dk; ++i)
        for (int j = 0; j < dv; ++j) Sb[i * dv + j] = std::fabs(S[i * dv + j]) + E[j];
      std::vector<double> ks_abs(static_cast<std::size_t>(cn) * dv, 0.0), qs_abs(ks_abs.size());
      for (int t = 0; t < cn; ++t) {
        for (int i = 0; i < dk; ++i) {
          const double ka = hc.kabs[t * dk + i], qa = hc.qabs[t * dk + i];
          for (int j = 0; j < dv; ++j) {
            ks_abs[t * dv + j] += ka * Sb[i * dv + j];
            qs_abs[t * dv + j] += qa * Sb[i * dv + j];
          }
        }
      }
      std::vector<double> kkabs(static_cast<std::size_t>(cn) * cn), qkabs(kkabs.size());
      for (int t = 0; t < cn; ++t)
        for (int s = 0; s <= t; ++s) {
          kkabs[t * cn + s] = abs_dot(&hc.kabs[t * dk], &hc.kabs[s * dk], dk);
          qkabs[t * cn + s] = abs_dot(&hc.qabs[t * dk], &hc.kabs[s * dk], dk);
        }

      std::vector<double> decay(static_cast<std::size_t>(cn) * cn);  // exp(G_t - G_s), s <= t
      for (int t = 0; t < cn; ++t)
        for (int s = 0; s <= t; ++s) decay[t * cn + s] = std::exp(G[t] - G[s]);

      F = E;
      std::vector<double> db(static_cast<std::size_t>(cn) * dv), delta(dv), ks(dv);
      for (int t = 0; t < cn; ++t) {
        const double a = std::exp(gt[t]), Dt = std::exp(G[t]);
        const double* qt = &hc.q[t * dk];
        const double* kt = &hc.k[t * dk];
        const float* vt = in.v + (c0 + t) * in.v_stride + h * dv;
        // The exact step.
        std::fill(ks.begin(), ks.end(), 0.0);
        for (int i = 0; i < dk; ++i)
          for (int j = 0; j < dv; ++j) ks[j] += kt[i] * S[i * dv + j];
        for (int j = 0; j < dv; ++j) delta[j] = beta[t] * (vt[j] - a * ks[j]);
        for (int i = 0; i < dk; ++i)
          for (int j = 0; j < dv; ++j) S[i * dv + j] = a * S[i * dv + j] + kt[i] * delta[j];
        double* ot = r.out.data() + ((c0 + t) * hv + h) * dv;
        for (int i = 0; i < dk; ++i)
          for (int j = 0; j < dv; ++j) ot[j] += qt[i] * S[i * dv + j];
        // Its bounds (steps 2-4 above).
        const double kn = hc.knorm[t];
        const double rho = a * std::max(1.0, std::fabs(1.0 - beta[t] * kn * kn));
        double* ob = r.out_bound.data() + ((c0 + t) * hv + h) * dv;
        for (int j = 0; j < dv; ++j) {
          double B = std::fabs(vt[j]) + Dt * ks_abs[t * dv + j];
          double O = Dt * qs_abs[t * dv + j];
          for (int s = 0; s < t; ++s) {
            const double d = decay[t * cn + s];
            B += d * kkabs[t * cn + s] * db[s * dv + j];
            O += d * qkabs[t * cn + s] * db[s * dv + j];
          }
          const double rt = gam * beta[t] * B;
          const double ed = rt + beta[t] * a * kn * F[j];
          db[t * dv + j] = std::fabs(delta[j]) + ed;
          F[j] = rho * F[j] + kn * rt;
          O += qkabs[t * cn + t] * db[t * dv + j];
          ob[j] = gam * O + hc.qnorm[t] * F[j];
        }
      }
      // The materialised chunk-end state (step 5).
      const double d_last = std::exp(G[cn - 1]);
      const double* f = &decay[(cn - 1) * cn];  // exp(G_last - G_t)
      for (int j = 0; j < dv; ++j) {
        double ss = 0.0;
        for (int i = 0; i < dk; ++i) {
          double m = d_last * Sb[i * dv + j];
          for (int t = 0; t < cn; ++t) m += f[t] * hc.kabs[t * dk + i] * db[t * dv + j];
          ss += (gam_end * m) * (gam_end * m);
        }
        E[j] = F[j] + std::sqrt(ss);
      }
    }
    double* Eb = r.state_bound.data() + h * sdim;
    for (int i = 0; i < dk; ++i)
      for (int j = 0; j < dv; ++j) Eb[i * dv + j] = E[j];
  }
  return r;
}

}  // namespace k3k::reference
