// Gated DeltaNet ops (Qwen3.5 linear attention) and the attention output gate: the recurrence
// (chunked prefill with its tunable chunk, and the decode step), the gates, the L2 norm of q/k,
// the causal convolution, the gated RMSNorm, the sigmoid gate. Inputs are seeded and shaped like a
// real layer's (q/k normalised, decays in (0, 1), beta in (0, 1)); each case is checked against its
// float64 reference under the layer's bound.
#include <cmath>

#include <fmt/format.h>

#include "harness/runner/errors.h"
#include "harness/runner/ops/op_lists.h"
#include "harness/runner/ops/op_support.h"
#include "k3k/cpu.h"
#include "k3k/deltanet.h"
#include "k3k/reference/attention.h"
#include "k3k/reference/deltanet.h"
#include "k3k/seeded_random.h"

namespace k3runner {
namespace {

bool rvv_layer(k3k::KernelPath p) {
  return p != k3k::KernelPath::kGeneric;
}

std::vector<float> normal(std::int64_t n, double sd, std::uint64_t seed) {
  std::vector<float> v(static_cast<std::size_t>(n));
  k3k::SeededRandom rng(seed);
  for (auto& x : v) x = static_cast<float>(rng.normal(0.0, sd));
  return v;
}

void normalise(std::vector<float>& x, int dim, double scale) {
  for (std::size_t r = 0; r < x.size() / dim; ++r) {
    double ss = 0;
    for (int i = 0; i < dim; ++i) ss += double(x[r * dim + i]) * x[r * dim + i];
    for (int i = 0; i < dim; ++i)
      x[r * dim + i] = static_cast<float>(x[r * dim + i] * scale / std::sqrt(ss + 1e-6));
  }
}

class GdnCase final : public OpCase {
 public:
  GdnCase(const CaseInputs& in, bool decode)
      : decode_(decode),
        tokens_(decode ? 1 : in.shape.integer("seq")),
        pool_(pool_of_size(static_cast<int>(in.params.integer("workers")))) {
    dims_ = {static_cast<int>(in.shape.integer("k_heads")),
             static_cast<int>(in.shape.integer("v_heads")),
             static_cast<int>(in.shape.integer("k_dim")),
             static_cast<int>(in.shape.integer("v_dim"))};
    try {
      k3k::validate(dims_, decode ? "gdn_decode" : "gdn_prefill");
    } catch (const std::invalid_argument& e) {
      throw UnsupportedShape(e.what());
    }
    if (decode)
      dtiling_.columns = static_cast<int>(in.params.integer("columns"));
    else
      ptiling_ = {static_cast<int>(in.params.integer("chunk")),
                  static_cast<int>(in.params.integer("columns"))};
    const std::int64_t qk = tokens_ * dims_.k_heads * dims_.k_dim;
    q_ = normal(qk, 1.0, in.seed + 1);
    k_ = normal(qk, 1.0, in.seed + 2);
    normalise(q_, dims_.k_dim, 1.0 / std::sqrt(double(dims_.k_dim)));
    normalise(k_, dims_.k_dim, 1.0);
    v_ = normal(tokens_ * dims_.v_heads * dims_.v_dim, 1.0, in.seed + 3);
    k3k::SeededRandom rng(in.seed + 4);
    for (std::int64_t i = 0; i < tokens_ * dims_.v_heads; ++i) {
      g_.push_back(static_cast<float>(-std::exp(rng.uniform(-5.0, 1.0))));
      beta_.push_back(static_cast<float>(1.0 / (1.0 + std::exp(-rng.normal(0.0, 1.5)))));
    }
    state0_ = normal(dims_.state_floats(), 0.3, in.seed + 5);
    state_ = state0_;
    out_.resize(static_cast<std::size_t>(tokens_ * dims_.v_heads * dims_.v_dim));
  }

  k3k::GdnInputs inputs() const {
    const std::int64_t qk = std::int64_t(dims_.k_heads) * dims_.k_dim,
                       vr = std::int64_t(dims_.v_heads) * dims_.v_dim;
    return {q_.data(), qk, k_.data(), qk, v_.data(), vr, g_.data(), beta_.data()};
  }

  void run_once() override {
    if (decode_)
      k3k::gdn_decode(path_, dims_, inputs(), state_, out_, pool_, dtiling_);
    else
      k3k::gdn_prefill(path_, dims_, tokens_, inputs(), state_, out_, pool_, ptiling_);
  }

  Traffic traffic() const override {
    const std::int64_t c = decode_ ? 1 : ptiling_.chunk;
    const std::int64_t per_token =
        std::int64_t(dims_.v_heads) *
        (3 * std::int64_t(dims_.k_dim) * dims_.v_dim + c * (dims_.k_dim + dims_.v_dim));
    return Traffic::of(k3k::gdn_traffic(dims_, decode_ ? 1 : tokens_, ptiling_.chunk),
                       2 * per_token * tokens_);
  }

  Accuracy check(bool) override {
    state_ = state0_;
    run_once();
    const int chunk = decode_ ? 1 : ptiling_.chunk;
    const auto model =
        rvv_layer(path_)
            ? k3k::reference::rvv_gdn_error_model(dims_.k_dim, chunk, k3k::cpu_features().vlenb)
            : k3k::reference::generic_gdn_error_model(dims_.k_dim, chunk);
    const auto ref = k3k::reference::gated_deltanet(dims_, tokens_, inputs(), state0_, model);
    Accuracy a = compare_outputs(out_, ref.out, ref.out_bound,
                                 "float64 token-by-token recurrence (outputs; state in extra)",
                                 static_cast<std::int64_t>(out_.size()));
    const auto s = k3k::reference::compare_to_reference(state_, ref.state, ref.state_bound);
    a.extra["state_worst_error_to_bound"] = s.worst_ratio;
    a.extra["state_max_abs_err"] = s.max_abs_err;
    a.pass = a.pass && s.pass;
    checked_state_ = state_;  // what --dump shows next to this call's output
    state_ = state0_;
    return a;
  }

  nlohmann::json params_used() const override {
    nlohmann::json j = {{"workers", pool_.size()}};
    if (decode_)
      j["columns"] = dtiling_.columns;
    else
      j.update({{"chunk", ptiling_.chunk}, {"columns", ptiling_.columns}});
    return j;
  }

  // Every input and both results: the recurrence can be recomputed from the dump alone.
  std::vector<DumpArray> dump_arrays() const override {
    const std::int64_t t = tokens_, hk = dims_.k_heads, hv = dims_.v_heads, dk = dims_.k_dim,
                       dv = dims_.v_dim;
    return {
        dump_of("q", "f32", {t, hk, dk}, "[tokens][k_heads][k_dim], L2-normalised and scaled",
                q_.data(), t * hk * dk),
        dump_of("k", "f32", {t, hk, dk}, "[tokens][k_heads][k_dim], L2-normalised", k_.data(),
                t * hk * dk),
        dump_of("v", "f32", {t, hv, dv}, "[tokens][v_heads][v_dim]", v_.data(), t * hv * dv),
        dump_of("g", "f32", {t, hv},
                "[tokens][v_heads] log decay (state *= exp(g)); value head h reads key head "
                "h / (v_heads / k_heads)",
                g_.data(), t * hv),
        dump_of("beta", "f32", {t, hv}, "[tokens][v_heads] write strength", beta_.data(), t * hv),
        dump_of("initial_state", "f32", {hv, dk, dv}, "[v_heads][k_dim][v_dim] before the call",
                state0_.data(), dims_.state_floats()),
        dump_of("output", "f32", {t, hv, dv}, "[tokens][v_heads][v_dim]", out_.data(), t * hv * dv),
        dump_of("state", "f32", {hv, dk, dv}, "[v_heads][k_dim][v_dim] after the call",
                checked_state_.empty() ? state_.data() : checked_state_.data(),
                dims_.state_floats())};
  }

 private:
  bool decode_;
  std::int64_t tokens_;
  k3k::WorkerPool& pool_;
  k3k::GdnDims dims_;
  k3k::GdnPrefillTiling ptiling_;
  k3k::GdnDecodeTiling dtiling_;
  std::vector<float> q_, k_, v_, g_, beta_, state0_, state_, checked_state_, out_;
};

// The row-wise ops: one class, the op name selects the kernel and its reference.
class GdnRowsCase final : public OpCase {
 public:
  GdnRowsCase(const CaseInputs& in, std::string op)
      : op_(std::move(op)), pool_(pool_of_size(static_cast<int>(in.params.integer("workers")))) {
    if (op_ == "gdn_gates") {
      rows_ = in.shape.integer("tokens");
      dim_ = in.shape.integer("heads");
    } else if (op_ == "l2norm") {
      rows_ = in.shape.integer("tokens") * in.shape.integer("heads");
      dim_ = in.shape.integer("dim");
    } else if (op_ == "causal_conv1d") {
      rows_ = in.shape.integer("tokens");
      dim_ = in.shape.integer("channels");
      kernel_ = static_cast<int>(in.shape.integer("kernel"));
    } else {
      rows_ = in.shape.integer("rows");
      dim_ = in.shape.integer("dim");
    }
    const std::int64_t n = rows_ * dim_;
    x_ = normal(n, op_ == "gdn_gates" ? 4.0 : 1.5, in.seed + 1);
    y_ = normal(n, 2.0, in.seed + 2);
    w_ = normal(op_ == "causal_conv1d" ? kernel_ * dim_ : dim_, 0.4, in.seed + 3);
    // gdn_gates: dt_bias its own values, so that a kernel (or a check) that swapped it with
    // a_log is seen in the output and in a recomputation from the dump.
    if (op_ == "gdn_gates") dt_bias_ = normal(dim_, 0.8, in.seed + 5);
    if (op_ == "gated_rmsnorm")
      for (auto& w : w_) w += 1.0f;
    state_ = normal((kernel_ - 1) * dim_, 1.0, in.seed + 4);
    state0_ = state_;
    out_.resize(static_cast<std::size_t>(n));
    out2_.resize(static_cast<std::size_t>(n));
  }

  void run_once() override {
    const int d = static_cast<int>(dim_);
    if (op_ == "gdn_gates")
      k3k::gdn_gates(path_, x_.data(), dim_, y_.data(), dim_, std::span(w_).first(dim_), dt_bias_,
                     out_, out2_, rows_, d, pool_);
    else if (op_ == "l2norm")
      k3k::l2norm(path_, x_.data(), d, out_.data(), d, rows_, 1, d, kEps, 1.0f, pool_);
    else if (op_ == "causal_conv1d")
      k3k::causal_conv1d(path_, x_, w_, state_, out_, rows_, d, kernel_, pool_);
    else if (op_ == "gated_rmsnorm")
      k3k::gated_rmsnorm(path_, x_, y_, w_, out_, rows_, d, kEps, pool_);
    else
      k3k::sigmoid_gate(path_, x_, y_, out_, pool_);
  }

  Traffic traffic() const override {
    const std::int64_t n = rows_ * dim_;
    const k3k::Traffic bytes = op_ == "causal_conv1d" ? k3k::conv_traffic(rows_, dim_, kernel_)
                               : op_ == "l2norm"      ? k3k::rowwise_traffic(n, 1)
                               : op_ == "gdn_gates"
                                   ? k3k::rowwise_traffic(2 * n, 2, 2 * dim_)
                                   : k3k::rowwise_traffic(n, 2, op_ == "gated_rmsnorm" ? dim_ : 0);
    return Traffic::of(bytes, (op_ == "causal_conv1d" ? 2 * kernel_ + 4 : 6) * n);
  }

  Accuracy check(bool) override {
    state_ = state0_;
    run_once();
    const int d = static_cast<int>(dim_);
    const std::int64_t depth =
        rvv_layer(path_) ? k3k::reference::rvv_dot_depth(d, k3k::cpu_features().vlenb) : 0;
    const std::string what = "float64 " + op_;
    Accuracy a;
    if (op_ == "gdn_gates") {
      const auto r = k3k::reference::gdn_gates(x_.data(), dim_, y_.data(), dim_,
                                               std::span(w_).first(dim_), dt_bias_, rows_, d);
      a = compare_outputs(out_, r.g, r.g_bound, what + " (g; beta in extra)", rows_ * dim_);
      const auto b = k3k::reference::compare_to_reference(out2_, r.beta, r.beta_bound);
      a.extra["beta_worst_error_to_bound"] = b.worst_ratio;
      a.pass = a.pass && b.pass;
    } else if (op_ == "l2norm") {
      const auto r = k3k::reference::l2norm(x_.data(), d, rows_, 1, d, kEps, 1.0f, depth);
      a = compare_outputs(out_, r.out, r.bound, what, rows_ * dim_);
    } else if (op_ == "causal_conv1d") {
      const auto r = k3k::reference::causal_conv1d(x_, w_, state0_, rows_, d, kernel_);
      a = compare_outputs(out_, r.out, r.bound, what, rows_ * dim_);
      a.pass = a.pass && state_ == r.state_out;
      a.extra["state_rolled_exactly"] = state_ == r.state_out;
    } else if (op_ == "gated_rmsnorm") {
      const auto r = k3k::reference::gated_rmsnorm(x_, y_, w_, rows_, d, kEps, depth);
      a = compare_outputs(out_, r.out, r.bound, what, rows_ * dim_);
    } else {
      const auto r = k3k::reference::sigmoid_gate(x_, y_);
      a = compare_outputs(out_, r.out, r.bound, what, rows_ * dim_);
    }
    checked_state_ = state_;  // what --dump shows next to this call's output
    state_ = state0_;
    return a;
  }

  nlohmann::json params_used() const override {
    nlohmann::json j = {{"workers", pool_.size()}};
    if (op_ == "l2norm" || op_ == "gated_rmsnorm") j["eps"] = kEps;  // what the call is given
    if (op_ == "l2norm") j["scale"] = 1.0;
    return j;
  }
  // The op's inputs under the names of its arguments, then its results.
  std::vector<DumpArray> dump_arrays() const override {
    const std::int64_t n = rows_ * dim_;
    std::vector<DumpArray> v;
    const auto rows = [&](const char* name, const char* layout, const std::vector<float>& x) {
      v.push_back(dump_of(name, "f32", {rows_, dim_}, layout, x.data(), n));
    };
    const auto vec = [&](const char* name, const char* layout, const float* x, std::int64_t count) {
      v.push_back(dump_of(name, "f32", {count}, layout, x, count));
    };
    if (op_ == "gdn_gates") {
      rows("a", "[tokens][heads]", x_);
      rows("b", "[tokens][heads]", y_);
      vec("a_log", "[heads]", w_.data(), dim_);
      vec("dt_bias", "[heads]", dt_bias_.data(), dim_);
      rows("g", "[tokens][heads] = -exp(a_log) * softplus(a + dt_bias)", out_);
      rows("beta", "[tokens][heads] = sigmoid(b)", out2_);
      return v;
    }
    if (op_ == "l2norm") {
      rows("x", "[rows][dim], eps 1e-6, scale 1", x_);
    } else if (op_ == "causal_conv1d") {
      rows("x", "[tokens][channels]", x_);
      v.push_back(dump_of("weight", "f32", {kernel_, dim_},
                          "[kernel][channels] tap-major: y[t][c] = silu(sum_j w[j][c] "
                          "u[t-kernel+1+j][c]), u = state then x",
                          w_.data(), kernel_ * dim_));
      v.push_back(dump_of("initial_state", "f32", {kernel_ - 1, dim_},
                          "[kernel-1][channels], the previous tokens, oldest first", state0_.data(),
                          (kernel_ - 1) * dim_));
      v.push_back(dump_of(
          "state", "f32", {kernel_ - 1, dim_}, "[kernel-1][channels] after the call",
          checked_state_.empty() ? state_.data() : checked_state_.data(), (kernel_ - 1) * dim_));
    } else if (op_ == "gated_rmsnorm") {
      rows("x", "[rows][dim]", x_);
      rows("gate", "[rows][dim]: out = rmsnorm(x) * weight * silu(gate), eps 1e-6", y_);
      vec("weight", "[dim]", w_.data(), dim_);
    } else {
      rows("x", "[rows][dim]: out = x * sigmoid(gate)", x_);
      rows("gate", "[rows][dim]", y_);
    }
    rows("output", "[rows][dim]", out_);
    return v;
  }

 private:
  static constexpr float kEps = 1e-6f;  // the norms' eps (params.eps of the dump's manifest)
  std::string op_;
  k3k::WorkerPool& pool_;
  std::int64_t rows_ = 0, dim_ = 0;
  int kernel_ = 1;
  std::vector<float> x_, y_, w_, dt_bias_, state_, state0_, checked_state_, out_, out2_;
};

KeySpec dim_key(const char* name, const char* help, std::int64_t max = 1 << 20) {
  return int_key(name, help, std::nullopt, 1, max);
}

std::vector<KeySpec> gdn_dims(std::vector<KeySpec> keys) {
  keys.push_back(dim_key("k_heads", "query/key heads", 1024));
  keys.push_back(dim_key("v_heads", "value heads (a multiple of k_heads)", 1024));
  keys.push_back(dim_key("k_dim", "key head size (state rows)", 4096));
  keys.push_back(dim_key("v_dim", "value head size (state columns)", 4096));
  return keys;
}

KeySpec columns_param() {
  return int_key("columns", "value columns per task (a task split; no effect on the bits)", "64", 1,
                 4096);
}

}  // namespace

void add_gdn_ops(std::vector<OpInfo>& ops) {
  auto gdn_footprint = [](const KeyValues& s, std::int64_t tokens) {
    const std::int64_t hv = s.integer("v_heads"), dk = s.integer("k_dim"), dv = s.integer("v_dim");
    return (4 * hv * dk * dv + tokens * (2 * s.integer("k_heads") * dk + 3 * hv * dv)) * 8;
  };
  ops.push_back(
      OpInfo{"gdn_prefill",
             "Gated DeltaNet chunked prefill (Qwen3.5 linear attention): state products, forward "
             "substitution, state update per chunk",
             gdn_dims({dim_key("seq", "tokens")}),
             {workers_param(),
              int_key("chunk", "tokens per chunk (changes the rounding and the work split)", "64",
                      1, 1024),
              columns_param()},
             [gdn_footprint](const KeyValues& s, const KeyValues&) {
               return gdn_footprint(s, s.integer("seq"));
             },
             [](const CaseInputs& in) { return std::make_unique<GdnCase>(in, false); }});
  ops.push_back(
      OpInfo{"gdn_decode",
             "Gated DeltaNet decode step on the per-head state (one token)",
             gdn_dims({}),
             {workers_param(), columns_param()},
             [gdn_footprint](const KeyValues& s, const KeyValues&) { return gdn_footprint(s, 1); },
             [](const CaseInputs& in) { return std::make_unique<GdnCase>(in, true); }});
  auto rows_footprint = [](std::int64_t n) { return n * 6 * 4; };
  auto add_rows = [&](const char* name, const char* description, std::vector<KeySpec> shape,
                      std::function<std::int64_t(const KeyValues&)> elements) {
    const std::string op = name;
    ops.push_back(
        OpInfo{op,
               description,
               std::move(shape),
               {workers_param()},
               [elements, rows_footprint](const KeyValues& s, const KeyValues&) {
                 return rows_footprint(elements(s));
               },
               [op](const CaseInputs& in) { return std::make_unique<GdnRowsCase>(in, op); }});
  };
  add_rows("gdn_gates",
           "Gated DeltaNet gates: g = -exp(A_log) softplus(a + dt_bias), beta = sigmoid(b)",
           {dim_key("tokens", "tokens"), dim_key("heads", "value heads", 4096)},
           [](const KeyValues& s) { return s.integer("tokens") * s.integer("heads"); });
  add_rows("l2norm", "L2 normalisation of q/k head rows: x / sqrt(sum x^2 + eps)",
           {dim_key("tokens", "tokens"), dim_key("heads", "heads", 4096),
            dim_key("dim", "head size", 1 << 16)},
           [](const KeyValues& s) {
             return s.integer("tokens") * s.integer("heads") * s.integer("dim");
           });
  add_rows("causal_conv1d", "depthwise causal convolution + SiLU with its rolling state",
           {dim_key("tokens", "tokens"), dim_key("channels", "channels (q, k, v of every head)"),
            int_key("kernel", "taps", "4", 1, 16)},
           [](const KeyValues& s) {
             return s.integer("tokens") * s.integer("channels") * (s.integer("kernel") + 1);
           });
  add_rows("gated_rmsnorm", "gated RMSNorm: rmsnorm(x) * w * silu(z) per head row",
           {dim_key("rows", "rows (tokens x value heads)"), dim_key("dim", "head size", 1 << 16)},
           [](const KeyValues& s) { return s.integer("rows") * s.integer("dim"); });
  add_rows("sigmoid_gate", "attention output gate: x * sigmoid(gate)",
           {dim_key("rows", "tokens"), dim_key("dim", "q_heads x head_dim")},
           [](const KeyValues& s) { return s.integer("rows") * s.integer("dim"); });
}

}  // namespace k3runner
