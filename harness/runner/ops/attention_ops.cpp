// attn_prefill / attn_decode: fused attention reading a KV cache (K rotated on write, Q rotated
// inside the kernel). The timed call is the attention alone; appends are timed by kv_append.
#include <fmt/format.h>

#include "errors.h"
#include "k3k/attention.h"
#include "k3k/reference/attention.h"
#include "ops/attention_shape.h"
#include "k3k/kv_cache.h"
#include "ops/op_lists.h"
#include "ops/op_support.h"

namespace k3bench {
namespace {

class AttentionCase final : public OpCase {
 public:
  AttentionCase(const CaseInputs& in, bool decode)
      : decode_(decode),
        q_heads_(static_cast<int>(in.shape.integer("q_heads"))),
        seq_(decode ? 1 : in.shape.integer("seq")),
        past_(decode ? in.shape.integer("ctx") - 1 : in.shape.integer("past")),
        config_(kv_config_from(in.shape, past_ + seq_, false)),
        cache_(config_),
        ref_cache_(config_),
        pool_(pool_of_size(static_cast<int>(in.params.integer("workers")))) {
    if (decode) decode_tiling_.chunk = static_cast<int>(in.params.integer("chunk"));
    else tiling_ = {static_cast<int>(in.params.integer("q_tile")), static_cast<int>(in.params.integer("kv_block"))};
    const std::int64_t row = std::int64_t(config_.n_kv_heads) * config_.head_dim;
    const auto k = attention_inputs((past_ + seq_) * row, in.seed + 1);
    const auto v = attention_inputs((past_ + seq_) * row, in.seed + 2);
    k3k::kv_append(in.path, cache_, k, v, past_ + seq_, pool_);
    ref_cache_.append(k, v, past_ + seq_);
    q_ = attention_inputs(seq_ * q_heads_ * config_.head_dim, in.seed + 3);
    out_ = k3k::AlignedBuffer<float>(q_.size());
  }

  void run_once() override {
    if (decode_) k3k::attention_decode(path_, cache_, q_, q_heads_, out_.span(), pool_, decode_tiling_);
    else k3k::attention_prefill(path_, cache_, q_, seq_, q_heads_, out_.span(), pool_, tiling_);
  }

  Traffic traffic() const override {
    // KV bytes read once per KV head group (GQA shares them), Q read and the output written.
    const std::int64_t elem = config_.dtype == k3k::KvDtype::f16 ? 2 : 4;
    const std::int64_t ctx = past_ + seq_;
    const std::int64_t kv = 2 * ctx * config_.n_kv_heads * config_.head_dim * elem;
    // Causal pairs (query i sees past + i + 1 keys); QK and PV each a multiply-add per element.
    const std::int64_t pairs = seq_ * past_ + seq_ * (seq_ + 1) / 2;
    return {kv, 2 * std::int64_t(q_.size()) * 4, 4 * pairs * q_heads_ * config_.head_dim};
  }

  Accuracy check(bool) override {
    run_once();
    // Each layer's bound uses its own summation depth (the RVV reductions depend on vlenb).
    const bool rvv = path_ == k3k::KernelPath::kRvv;
    const int vlenb = k3k::cpu_features().vlenb;
    const int d = config_.head_dim;
    const auto model = decode_ ? (rvv ? k3k::reference::rvv_decode_error_model(d, decode_tiling_, vlenb)
                                      : k3k::reference::generic_decode_error_model(d, decode_tiling_))
                               : (rvv ? k3k::reference::rvv_prefill_error_model(d, tiling_, vlenb)
                                      : k3k::reference::generic_prefill_error_model(d, tiling_));
    const auto ref = decode_ ? k3k::reference::attention_decode(ref_cache_, q_, q_heads_, model)
                             : k3k::reference::attention_prefill(ref_cache_, q_, seq_, q_heads_, model);
    return compare_outputs(out_.span(), ref.out, ref.bound,
                           "float64 attention over a float64 cache built from the same unrotated inputs",
                           static_cast<std::int64_t>(out_.size()));
  }

  nlohmann::json params_used() const override {
    nlohmann::json j = {{"workers", pool_.size()}, {"rotary_dim", config_.rope.rotary_dim}, {"causal", true}};
    if (decode_) j["chunk"] = decode_tiling_.chunk;
    else j.update({{"q_tile", tiling_.q_tile}, {"kv_block", tiling_.kv_block}});
    return j;
  }

  std::vector<DumpArray> dump_arrays() const override {
    const std::int64_t d = config_.head_dim, hkv = config_.n_kv_heads, cap = config_.capacity;
    std::vector<DumpArray> v = {
        dump_of("q", "f32", {seq_, q_heads_, d}, "[tokens][q_heads][head_dim], unrotated", q_.data(), std::int64_t(q_.size())),
        dump_of("output", "f32", {seq_, q_heads_, d}, "[tokens][q_heads][head_dim]", out_.data(), std::int64_t(out_.size()))};
    const std::string layout = "[kv_heads][capacity][head_dim], K rotated at its position";
    if (config_.dtype == k3k::KvDtype::f32) {
      v.push_back(dump_of("k_cache", "f32", {hkv, cap, d}, layout, cache_.k_f32(), hkv * cap * d));
      v.push_back(dump_of("v_cache", "f32", {hkv, cap, d}, layout, cache_.v_f32(), hkv * cap * d));
    } else {
      v.push_back(dump_of("k_cache", "f16", {hkv, cap, d}, layout, cache_.k_f16(), hkv * cap * d));
      v.push_back(dump_of("v_cache", "f16", {hkv, cap, d}, layout, cache_.v_f16(), hkv * cap * d));
    }
    return v;
  }

 private:
  bool decode_;
  int q_heads_;
  std::int64_t seq_, past_;
  k3k::KvCacheConfig config_;
  k3k::KvCache cache_;
  k3k::reference::RefKvCache ref_cache_;
  k3k::WorkerPool& pool_;
  k3k::AttentionTiling tiling_;
  k3k::DecodeTiling decode_tiling_;
  std::vector<float> q_;
  k3k::AlignedBuffer<float> out_;
};

std::int64_t attention_footprint(const KeyValues& s, std::int64_t seq, std::int64_t ctx) {
  const std::int64_t d = s.integer("head_dim");
  // kernel cache + float64 reference cache (K, |K|, V) + inputs
  return ctx * s.integer("kv_heads") * d * (8 + 24 + 8) + 2 * seq * s.integer("q_heads") * d * 4;
}

}  // namespace

void add_attention_ops(std::vector<OpInfo>& ops) {
  ops.push_back(OpInfo{
      "attn_prefill",
      "flash-style causal attention (QK, online softmax, PV fused; GQA; RoPE on Q in-kernel)",
      attention_shape_keys({int_key("seq", "new tokens (queries)", std::nullopt, 1, 1 << 20),
                            int_key("past", "tokens already in the cache", "0", 0, 1 << 24)},
                           true),
      {workers_param(), int_key("q_tile", "query rows per task", "16", 1, 4096),
       int_key("kv_block", "keys per online-softmax block", "64", 1, 1 << 16)},
      [](const KeyValues& s, const KeyValues&) {
        return attention_footprint(s, s.integer("seq"), s.integer("seq") + s.integer("past"));
      },
      [](const CaseInputs& in) { return std::make_unique<AttentionCase>(in, false); }});
  ops.push_back(OpInfo{
      "attn_decode",
      "decode attention for one token, split over KV heads and context chunks, online-softmax merge",
      attention_shape_keys({int_key("ctx", "context length including the new token", std::nullopt, 1, 1 << 24)}, true),
      {workers_param(), int_key("chunk", "context tokens per task", "256", 1, 1 << 20)},
      [](const KeyValues& s, const KeyValues&) { return attention_footprint(s, 1, s.integer("ctx")); },
      [](const CaseInputs& in) { return std::make_unique<AttentionCase>(in, true); }});
}

}  // namespace k3bench
