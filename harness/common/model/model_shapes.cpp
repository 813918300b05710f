#include "harness/common/model/model_shapes.h"

#include <fmt/format.h>

namespace k3model {
namespace {

class Shapes {
 public:
  void add(const std::string& op, const std::string& role,
           std::map<std::string, std::string> shape) {
    for (auto& e : out_) {
      if (e.op == op && e.shape == shape) {
        e.role += "+" + role;
        return;
      }
    }
    out_.push_back({op, role, std::move(shape)});
  }
  std::vector<OpShape> take() { return std::move(out_); }

 private:
  std::vector<OpShape> out_;
};

std::string s(std::int64_t x) {
  return std::to_string(x);
}

}  // namespace

std::vector<OpShape> derive_op_shapes(const ModelConfig& m) {
  Shapes out;
  const std::int64_t h = m.hidden, mt = m.bench_prefill_tokens, ctx = m.bench_context;
  const std::string theta = fmt::format("{}", m.rope_theta);
  // Every Linear, decode (M = 1) then prefill (M = prefill_tokens), and the quantisation of its
  // input rows (one per distinct K).
  struct Proj {
    std::string role;
    std::int64_t n, k;
  };
  std::vector<Proj> projs;
  if (m.full_layers() > 0) {
    projs.push_back({"q_proj", m.q_proj_n(), h});
    projs.push_back({"k_proj", m.kv_dim(), h});
    projs.push_back({"v_proj", m.kv_dim(), h});
    projs.push_back({"o_proj", h, m.attn_dim()});
  }
  if (m.linear_layers() > 0) {
    projs.push_back({"in_proj_qkv", m.conv_dim(), h});
    projs.push_back({"in_proj_z", m.lin_value_dim(), h});
    projs.push_back({"in_proj_a", m.lin_v_heads, h});
    projs.push_back({"in_proj_b", m.lin_v_heads, h});
    projs.push_back({"out_proj", h, m.lin_value_dim()});
  }
  projs.push_back({"gate_proj", m.intermediate, h});
  projs.push_back({"up_proj", m.intermediate, h});
  projs.push_back({"down_proj", h, m.intermediate});
  projs.push_back({m.tied_embeddings ? "lm_head(tied)" : "lm_head", m.vocab, h});
  for (const auto& p : projs) out.add("linear_decode", p.role, {{"n", s(p.n)}, {"k", s(p.k)}});
  for (const auto& p : projs) {
    if (p.role.starts_with("lm_head")) continue;  // prefill computes the last token's logits only
    out.add("linear_prefill", p.role, {{"m", s(mt)}, {"n", s(p.n)}, {"k", s(p.k)}});
  }
  for (const auto& p : projs) {
    out.add("quant_pack_decode", p.role + ".input", {{"k", s(p.k)}});
    if (!p.role.starts_with("lm_head"))
      out.add("quant_pack_prefill", p.role + ".input", {{"m", s(mt)}, {"k", s(p.k)}});
  }
  out.add("embedding", "embed_tokens", {{"tokens", "1"}, {"vocab", s(m.vocab)}, {"dim", s(h)}});
  out.add("embedding", "embed_tokens", {{"tokens", s(mt)}, {"vocab", s(m.vocab)}, {"dim", s(h)}});
  for (const std::int64_t rows : {std::int64_t(1), mt}) {
    out.add("rmsnorm", "input_norm+post_norm+final_norm", {{"rows", s(rows)}, {"dim", s(h)}});
    out.add("swiglu", "mlp_act", {{"rows", s(rows)}, {"dim", s(m.intermediate)}});
  }
  if (m.full_layers() > 0) {
    const std::string rot = s(m.rotary_dim == m.head_dim ? 0 : m.rotary_dim);
    const std::map<std::string, std::string> heads = {{"q_heads", s(m.q_heads)},
                                                      {"kv_heads", s(m.kv_heads)},
                                                      {"head_dim", s(m.head_dim)},
                                                      {"rotary_dim", rot},
                                                      {"theta", theta}};
    auto with = [](std::map<std::string, std::string> a, std::map<std::string, std::string> b) {
      a.insert(b.begin(), b.end());
      return a;
    };
    out.add("attn_decode", "attention", with(heads, {{"ctx", s(ctx)}}));
    out.add("attn_prefill", "attention", with(heads, {{"seq", s(mt)}, {"past", "0"}}));
    auto kv = heads;
    kv.erase("q_heads");
    out.add("kv_append", "kv_cache", with(kv, {{"tokens", "1"}, {"past", s(ctx - 1)}}));
    out.add("kv_append", "kv_cache", with(kv, {{"tokens", s(mt)}, {"past", "0"}}));
    for (const std::int64_t t : {std::int64_t(1), mt}) {
      if (m.qk_norm) {
        out.add("rmsnorm", "q_norm", {{"rows", s(t * m.q_heads)}, {"dim", s(m.head_dim)}});
        out.add("rmsnorm", "k_norm", {{"rows", s(t * m.kv_heads)}, {"dim", s(m.head_dim)}});
      }
      if (m.attn_output_gate)
        out.add("sigmoid_gate", "attn_output_gate", {{"rows", s(t)}, {"dim", s(m.attn_dim())}});
    }
  }
  if (m.linear_layers() > 0) {
    const std::map<std::string, std::string> dims = {{"k_heads", s(m.lin_k_heads)},
                                                     {"v_heads", s(m.lin_v_heads)},
                                                     {"k_dim", s(m.lin_k_dim)},
                                                     {"v_dim", s(m.lin_v_dim)}};
    out.add("gdn_decode", "gated_deltanet", dims);
    auto pre = dims;
    pre["seq"] = s(mt);
    out.add("gdn_prefill", "gated_deltanet", pre);
    for (const std::int64_t t : {std::int64_t(1), mt}) {
      out.add("causal_conv1d", "conv1d",
              {{"tokens", s(t)}, {"channels", s(m.conv_dim())}, {"kernel", s(m.conv_kernel)}});
      out.add("l2norm", "q_norm+k_norm",
              {{"tokens", s(t)}, {"heads", s(m.lin_k_heads)}, {"dim", s(m.lin_k_dim)}});
      out.add("gdn_gates", "gates", {{"tokens", s(t)}, {"heads", s(m.lin_v_heads)}});
      out.add("gated_rmsnorm", "norm", {{"rows", s(t * m.lin_v_heads)}, {"dim", s(m.lin_v_dim)}});
    }
  }
  return out.take();
}

}  // namespace k3model
