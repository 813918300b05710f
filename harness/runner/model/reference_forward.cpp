#include "harness/runner/model/reference_forward.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "k3k/linear.h"
#include "k3k/rope.h"

namespace k3runner::model {
namespace {

using Vec = std::vector<double>;

double silu(double x) {
  return x / (1.0 + std::exp(-x));
}
double sigmoid(double x) {
  return 1.0 / (1.0 + std::exp(-x));
}
double softplus(double x) {
  return std::max(x, 0.0) + std::log1p(std::exp(-std::fabs(x)));
}

struct Dense {
  std::int64_t n = 0, k = 0;
  Vec w;
};
Dense dense(const k3k::W4B64Packed& m) {
  return {m.n, m.k, m.n > 0 ? dequantize(m) : Vec{}};
}

Vec vec(const k3k::AlignedBuffer<float>& v) {
  return Vec(v.begin(), v.end());
}

// The numerics contract's activation quantisation, in double: sa = absmax / 127, qa = rne(a / sa).
Vec quantized(std::span<const double> x) {
  double absmax = 0.0;
  for (double v : x) absmax = std::max(absmax, std::fabs(v));
  Vec q(x.size(), 0.0);
  if (absmax == 0.0) return q;
  const double sa = absmax / 127.0;
  for (std::size_t i = 0; i < x.size(); ++i)
    q[i] = std::clamp(std::nearbyint(x[i] * (127.0 / absmax)), -127.0, 127.0) * sa;
  return q;
}

class Model {
 public:
  Model(const k3model::ModelConfig& c, const ModelWeights& w, const ReferenceOptions& o)
      : c_(c),
        o_(o),
        embed_(dense(w.embedding)),
        head_(dense(w.output_head())),
        final_norm_(vec(w.final_norm)) {
    for (const auto& l : w.layers) {
      Layer L;
      L.linear = l.linear;
      L.in_norm = vec(l.input_norm);
      L.post_norm = vec(l.post_norm);
      L.gate = dense(l.gate);
      L.up = dense(l.up);
      L.down = dense(l.down);
      if (l.linear) {
        L.qkv = dense(l.gdn.qkv);
        L.z = dense(l.gdn.z);
        L.a = dense(l.gdn.a);
        L.b = dense(l.gdn.b);
        L.out = dense(l.gdn.out);
        L.conv = vec(l.gdn.conv);
        L.a_log = vec(l.gdn.a_log);
        L.dt_bias = vec(l.gdn.dt_bias);
        L.gnorm = vec(l.gdn.norm);
        L.state.assign(static_cast<std::size_t>(c.lin_v_heads) * c.lin_k_dim * c.lin_v_dim, 0.0);
        L.history.assign(static_cast<std::size_t>(c.conv_kernel - 1) * c.conv_dim(), 0.0);
      } else {
        L.q = dense(l.attn.q);
        L.k = dense(l.attn.k);
        L.v = dense(l.attn.v);
        L.o = dense(l.attn.o);
        L.q_norm = vec(l.attn.q_norm);
        L.k_norm = vec(l.attn.k_norm);
      }
      layers_.push_back(std::move(L));
    }
  }

  // One token at position `pos`; returns its logits.
  Vec step(std::int32_t token, std::int64_t pos) {
    const std::int64_t h = c_.hidden;
    Vec x(embed_.w.begin() + token * h, embed_.w.begin() + (token + 1) * h);
    for (auto& L : layers_) {
      const Vec hn = rmsnorm(x, L.in_norm);
      const Vec y = L.linear ? deltanet(L, hn) : attention(L, hn, pos);
      for (std::int64_t i = 0; i < h; ++i) x[i] += y[i];
      const Vec hm = rmsnorm(x, L.post_norm);
      Vec g = linear(L.gate, hm);
      const Vec u = linear(L.up, hm);
      for (std::size_t i = 0; i < g.size(); ++i) g[i] = silu(g[i]) * u[i];
      const Vec d = linear(L.down, g);
      for (std::int64_t i = 0; i < h; ++i) x[i] += d[i];
    }
    return linear(head_, rmsnorm(x, final_norm_));
  }

 private:
  struct Layer {
    bool linear = false;
    Vec in_norm, post_norm, q_norm, k_norm, conv, a_log, dt_bias, gnorm;
    Dense q, k, v, o, qkv, z, a, b, out, gate, up, down;
    std::vector<Vec> keys, values;  // per position: [kv_heads * head_dim], K rotated
    Vec state, history;             // Gated DeltaNet: [v_heads][k_dim][v_dim], conv inputs
  };

  Vec rmsnorm(std::span<const double> x, const Vec& w, std::size_t offset = 0) const {
    const std::size_t n = w.size();
    double ss = 0.0;
    for (std::size_t i = 0; i < n; ++i) ss += x[offset + i] * x[offset + i];
    const double inv = 1.0 / std::sqrt(ss / double(n) + c_.rms_eps);
    Vec y(n);
    for (std::size_t i = 0; i < n; ++i) y[i] = x[offset + i] * inv * w[i];
    return y;
  }

  Vec linear(const Dense& m, std::span<const double> x) const {
    const Vec in = o_.quantize_activations ? quantized(x) : Vec(x.begin(), x.end());
    Vec y(static_cast<std::size_t>(m.n), 0.0);
    for (std::int64_t r = 0; r < m.n; ++r) {
      double s = 0.0;
      for (std::int64_t i = 0; i < m.k; ++i) s += m.w[r * m.k + i] * in[i];
      y[r] = s;
    }
    return y;
  }

  void rope(double* v, std::int64_t pos) const {
    const int half = c_.rotary_dim / 2;
    const k3k::RopeConfig rc{c_.rotary_dim, c_.rope_theta};
    for (int i = 0; i < half; ++i) {
      const double a = double(pos) * k3k::rope_inv_freq(rc, i);
      const double x0 = v[i], x1 = v[i + half];
      v[i] = x0 * std::cos(a) - x1 * std::sin(a);
      v[i + half] = x1 * std::cos(a) + x0 * std::sin(a);
    }
  }

  Vec attention(Layer& L, const Vec& hn, std::int64_t pos) {
    const int d = c_.head_dim, hq = c_.q_heads, hk = c_.kv_heads;
    const Vec qg = linear(L.q, hn);
    Vec k = linear(L.k, hn);
    const Vec v = linear(L.v, hn);
    Vec q(static_cast<std::size_t>(hq) * d), gate(q.size());
    for (int h = 0; h < hq; ++h) {
      for (int i = 0; i < d; ++i) {
        q[h * d + i] = c_.attn_output_gate ? qg[2 * h * d + i] : qg[h * d + i];
        if (c_.attn_output_gate) gate[h * d + i] = qg[(2 * h + 1) * d + i];
      }
    }
    for (int h = 0; h < hq && c_.qk_norm; ++h) {
      const Vec n = rmsnorm(q, L.q_norm, static_cast<std::size_t>(h) * d);
      std::copy(n.begin(), n.end(), q.begin() + h * d);
    }
    for (int h = 0; h < hk && c_.qk_norm; ++h) {
      const Vec n = rmsnorm(k, L.k_norm, static_cast<std::size_t>(h) * d);
      std::copy(n.begin(), n.end(), k.begin() + h * d);
    }
    for (int h = 0; h < hq; ++h) rope(&q[h * d], pos);
    for (int h = 0; h < hk; ++h) rope(&k[h * d], pos);
    L.keys.push_back(k);
    L.values.push_back(v);
    Vec out(q.size(), 0.0);
    const double scale = 1.0 / std::sqrt(double(d));
    for (int h = 0; h < hq; ++h) {
      const int kh = h / (hq / hk);
      Vec s(L.keys.size());
      double m = -INFINITY;
      for (std::size_t p = 0; p < L.keys.size(); ++p) {
        double dot = 0.0;
        for (int i = 0; i < d; ++i) dot += q[h * d + i] * L.keys[p][kh * d + i];
        s[p] = dot * scale;
        m = std::max(m, s[p]);
      }
      double sum = 0.0;
      for (auto& x : s) sum += (x = std::exp(x - m));
      for (std::size_t p = 0; p < s.size(); ++p)
        for (int i = 0; i < d; ++i) out[h * d + i] += s[p] / sum * L.values[p][kh * d + i];
    }
    if (c_.attn_output_gate)
      for (std::size_t i = 0; i < out.size(); ++i) out[i] *= sigmoid(gate[i]);
    return linear(L.o, out);
  }

  Vec deltanet(Layer& L, const Vec& hn) {
    const int hk = c_.lin_k_heads, hv = c_.lin_v_heads, dk = c_.lin_k_dim, dv = c_.lin_v_dim;
    const int kern = c_.conv_kernel;
    const std::int64_t cd = c_.conv_dim(), kd = c_.lin_key_dim();
    const Vec mixed = linear(L.qkv, hn), z = linear(L.z, hn), a = linear(L.a, hn),
              b = linear(L.b, hn);
    // Causal depthwise convolution over [history; mixed], SiLU; the history rolls.
    Vec u(static_cast<std::size_t>(cd));
    for (std::int64_t ch = 0; ch < cd; ++ch) {
      double acc = 0.0;
      for (int j = 0; j < kern; ++j) {
        const double in = j < kern - 1 ? L.history[j * cd + ch] : mixed[ch];
        acc += L.conv[j * cd + ch] * in;
      }
      u[ch] = silu(acc);
    }
    if (kern > 1) {
      std::copy(L.history.begin() + cd, L.history.end(), L.history.begin());
      std::copy(mixed.begin(), mixed.end(), L.history.end() - cd);
    }
    auto l2 = [&](std::int64_t off, double scale) {
      double ss = 0.0;
      for (int i = 0; i < dk; ++i) ss += u[off + i] * u[off + i];
      const double inv = scale / std::sqrt(ss + 1e-6);
      for (int i = 0; i < dk; ++i) u[off + i] *= inv;
    };
    for (int h = 0; h < hk; ++h) {
      l2(h * dk, 1.0 / std::sqrt(double(dk)));
      l2(kd + h * dk, 1.0);
    }
    Vec o(static_cast<std::size_t>(hv) * dv);
    for (int h = 0; h < hv; ++h) {
      const int kh = h / (hv / hk);
      const double* q = &u[kh * dk];
      const double* k = &u[kd + kh * dk];
      const double* v = &u[2 * kd + h * dv];
      const double decay = std::exp(-std::exp(L.a_log[h]) * softplus(a[h] + L.dt_bias[h]));
      const double beta = sigmoid(b[h]);
      double* S = &L.state[static_cast<std::size_t>(h) * dk * dv];
      Vec ks(dv, 0.0);
      for (int i = 0; i < dk; ++i)
        for (int j = 0; j < dv; ++j) ks[j] += k[i] * S[i * dv + j];
      for (int i = 0; i < dk; ++i)
        for (int j = 0; j < dv; ++j)
          S[i * dv + j] = decay * S[i * dv + j] + k[i] * beta * (v[j] - decay * ks[j]);
      for (int j = 0; j < dv; ++j) {
        double s = 0.0;
        for (int i = 0; i < dk; ++i) s += q[i] * S[i * dv + j];
        o[h * dv + j] = s;
      }
      // Gated RMSNorm of the head.
      const Vec n = rmsnorm(o, L.gnorm, static_cast<std::size_t>(h) * dv);
      for (int j = 0; j < dv; ++j) o[h * dv + j] = n[j] * silu(z[h * dv + j]);
    }
    return linear(L.out, o);
  }

  const k3model::ModelConfig& c_;
  ReferenceOptions o_;
  Dense embed_, head_;
  Vec final_norm_;
  std::vector<Layer> layers_;
};

}  // namespace

std::vector<double> dequantize(const k3k::W4B64Packed& packed) {
  // Weights packed for a layer are read through their kRowTile32 form (the packing's inverse).
  k3k::W4B64Packed unpacked;
  if (packed.layout != k3k::W4B64Layout::kRowTile32) unpacked = k3k::rowtile32_of(packed);
  const k3k::W4B64Packed& w = packed.layout == k3k::W4B64Layout::kRowTile32 ? packed : unpacked;
  const std::int64_t nb = w.blocks_per_row();
  std::vector<double> out(static_cast<std::size_t>(w.n * w.k));
  for (std::int64_t t = 0; t < w.row_tiles(); ++t) {
    for (std::int64_t b = 0; b < nb; ++b) {
      const std::uint8_t* codes = w.codes.data() + (t * nb + b) * 32 * k3k::kW4RowTile;
      for (int r = 0; r < k3k::kW4RowTile; ++r) {
        const std::int64_t row = t * k3k::kW4RowTile + r;
        if (row >= w.n) break;
        const double s = w.scale_at((t * nb + b) * k3k::kW4RowTile + r);
        const double beta = w.beta_at((t * nb + b) * k3k::kW4RowTile + r);
        for (int j = 0; j < 32; ++j) {
          const std::uint8_t byte = codes[j * k3k::kW4RowTile + r];
          out[static_cast<std::size_t>(row * w.k + b * 64 + j)] = s * ((byte & 0xF) - 8) + beta;
          out[static_cast<std::size_t>(row * w.k + b * 64 + 32 + j)] = s * ((byte >> 4) - 8) + beta;
        }
      }
    }
  }
  return out;
}

std::vector<std::vector<double>> reference_logits(const k3model::ModelConfig& config,
                                                  const ModelWeights& weights,
                                                  std::span<const std::int32_t> prompt,
                                                  std::span<const std::int32_t> decode_tokens,
                                                  const ReferenceOptions& options) {
  Model m(config, weights, options);
  std::vector<std::vector<double>> out;
  std::int64_t pos = 0;
  Vec last;
  for (const std::int32_t t : prompt) last = m.step(t, pos++);
  out.push_back(last);
  for (const std::int32_t t : decode_tokens) out.push_back(m.step(t, pos++));
  return out;
}

}  // namespace k3runner::model
