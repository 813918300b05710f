// attn_prefill / attn_decode: fused attention reading a KV cache (K rotated on write, Q rotated
// inside the kernel). The timed call is the attention alone; appends are timed by kv_append.
#include <fmt/format.h>

#include "harness/runner/errors.h"
#include "k3k/attention.h"
#include "k3k/reference/attention.h"
#include "harness/runner/ops/attention_shape.h"
#include "k3k/kv_cache.h"
#include "k3k/linear.h"
#include "k3k/tcm_attention.h"
#include "harness/runner/tcm_context.h"
#include "harness/runner/ops/op_lists.h"
#include "harness/runner/ops/op_support.h"

namespace k3runner {
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
    if (q_heads_ % config_.n_kv_heads != 0) {
      throw UnsupportedShape(fmt::format(
          "shape: q_heads={} is not a multiple of kv_heads={} (grouped-query attention: each KV "
          "head serves q_heads / kv_heads query heads)",
          q_heads_, config_.n_kv_heads));
    }
    const int prefetch = static_cast<int>(in.params.integer("prefetch"));
    if (prefetch != 0 && !k3k::prefetch_built()) {
      throw UnsupportedShape(fmt::format("--params: prefetch={} needs a build with Zicbop (K3_ENABLE_ZICBOP)", prefetch));
    }
    if (decode) decode_tiling_ = {static_cast<int>(in.params.integer("chunk")), prefetch};
    else {
      tiling_ = {static_cast<int>(in.params.integer("q_tile")), static_cast<int>(in.params.integer("kv_block")), prefetch};
      configure_tcm(in.params);
    }
    const std::int64_t row = std::int64_t(config_.n_kv_heads) * config_.head_dim;
    const auto k = attention_inputs((past_ + seq_) * row, in.seed + 1);
    const auto v = attention_inputs((past_ + seq_) * row, in.seed + 2);
    k3k::kv_append(in.path, cache_, k, v, past_ + seq_, pool_);
    ref_cache_.append(k, v, past_ + seq_);
    q_ = attention_inputs(seq_ * q_heads_ * config_.head_dim, in.seed + 3);
    out_ = k3k::AlignedBuffer<float>(q_.size());
  }

  void run_once() override {
    if (decode_) {
      k3k::attention_decode(path_, cache_, q_, q_heads_, out_.span(), pool_, decode_tiling_);
      return;
    }
    if (workspace_ != nullptr && calls_ == 0) {  // the gate once per case, as an engine decides it per shape
      gate_ = k3k::decide_tcm_attention_prefill(cache_, seq_, tiling_, workspace_, tcm_params_);
    }
    k3k::TcmAttentionStats stats;
    k3k::attention_prefill(path_, cache_, q_, seq_, q_heads_, out_.span(), pool_, tiling_, 0.0f,
                           {workspace_, &tcm_params_, workspace_ != nullptr ? &gate_ : nullptr, &stats});
    ++calls_;
    staged_bytes_ += stats.bytes_staged;
    workers_without_block_ += stats.workers_without_block;
  }

  Traffic traffic() const override {
    // KV bytes read once per KV head group (GQA shares them), Q read and the output written.
    // Causal pairs (query i sees past + i + 1 keys); QK and PV each a multiply-add per element.
    const std::int64_t pairs = seq_ * past_ + seq_ * (seq_ + 1) / 2;
    return Traffic::of(k3k::attention_traffic(cache_, seq_, q_heads_),
                       4 * pairs * q_heads_ * config_.head_dim);
  }

  Accuracy check(bool) override {
    run_once();
    // Each layer's bound uses its own score depth (RVV: chains over the head dim, key blocks).
    const bool rvv = path_ == k3k::KernelPath::kRvv;
    const int d = config_.head_dim;
    const auto model = decode_ ? (rvv ? k3k::reference::rvv_decode_error_model(d, decode_tiling_)
                                      : k3k::reference::generic_decode_error_model(d, decode_tiling_))
                               : (rvv ? k3k::reference::rvv_prefill_error_model(d, tiling_)
                                      : k3k::reference::generic_prefill_error_model(d, tiling_));
    const auto ref = decode_ ? k3k::reference::attention_decode(ref_cache_, q_, q_heads_, model)
                             : k3k::reference::attention_prefill(ref_cache_, q_, seq_, q_heads_, model);
    return compare_outputs(out_.span(), ref.out, ref.bound,
                           "float64 attention over a float64 cache built from the same unrotated inputs",
                           static_cast<std::int64_t>(out_.size()));
  }

  nlohmann::json params_used() const override {
    nlohmann::json j = {{"workers", pool_.size()}, {"rotary_dim", config_.rope.rotary_dim}, {"causal", true}};
    if (decode_) j.update({{"chunk", decode_tiling_.chunk}, {"prefetch", decode_tiling_.prefetch_bytes}});
    else j.update({{"q_tile", tiling_.q_tile}, {"kv_block", tiling_.kv_block}, {"prefetch", tiling_.prefetch_bytes},
                   {"tcm", tcm_json()}});
    return j;
  }

  std::vector<DumpArray> dump_arrays() const override {
    const std::int64_t d = config_.head_dim;
    const std::string q_layout = fmt::format(
        "[tokens][q_heads][head_dim], unrotated: the kernel rotates query t at position {} + t "
        "(the cache's RoPE); scale 1/sqrt(head_dim); query head h reads kv head h / (q_heads / "
        "kv_heads); causal",
        past_);
    std::vector<DumpArray> v = {
        dump_of("q", "f32", {seq_, q_heads_, d}, q_layout, q_.data(), std::int64_t(q_.size())),
        dump_of("output", "f32", {seq_, q_heads_, d}, "[tokens][q_heads][head_dim]", out_.data(),
                std::int64_t(out_.size()))};
    for (DumpArray& a : kv_cache_dump(cache_)) v.push_back(std::move(a));
    return v;
  }

 private:
  void configure_tcm(const KeyValues& p) {
    const std::string use = p.text("tcm");
    tcm_params_.use = use == "on" ? k3k::TcmUse::kOn : use == "off" ? k3k::TcmUse::kOff : k3k::TcmUse::kAuto;
    tcm_params_.kv_blocks = static_cast<int>(p.integer("tcm_kv_blocks"));
    tcm_params_.ctx_min = p.integer("ctx_min");
    if (tcm_params_.use != k3k::TcmUse::kOff) {
      tcm_ = &tcm_context(p.text("tcm_backend"));
      workspace_ = tcm_workspace(*tcm_, pool_);
    }
  }

  // The gate's decision and the backend, and the K/V bytes staged per call.
  nlohmann::json tcm_json() const {
    nlohmann::json j = {{"use", p_word(tcm_params_.use)},
                        {"ctx_min", tcm_params_.ctx_min},
                        {"backend", tcm_ != nullptr && tcm_->tcm != nullptr ? k3k::tcm::to_string(tcm_->tcm->backend()) : "off"},
                        {"backend_reason", tcm_ != nullptr ? tcm_->reason : "tcm=off"}};
    if (calls_ == 0) return j;
    j["gate"] = {{"use_tcm", gate_.use_tcm}, {"reason", gate_.reason}, {"kv_blocks", gate_.kv_blocks}};
    const double n = static_cast<double>(calls_);
    j["per_call"] = {{"calls", calls_},
                     {"bytes_staged", static_cast<double>(staged_bytes_) / n},
                     {"workers_without_block", static_cast<double>(workers_without_block_) / n}};
    return j;
  }
  static const char* p_word(k3k::TcmUse use) {
    return use == k3k::TcmUse::kOn ? "on" : use == k3k::TcmUse::kOff ? "off" : "auto";
  }

  bool decode_;
  int q_heads_;
  std::int64_t seq_, past_;
  k3k::KvCacheConfig config_;
  k3k::KvCache cache_;
  k3k::reference::RefKvCache ref_cache_;
  k3k::WorkerPool& pool_;
  k3k::AttentionTiling tiling_;
  k3k::DecodeTiling decode_tiling_;
  // Prefill through TCM (k3k/tcm_attention.h): parameters, backend, and what the calls reported.
  k3k::TcmAttentionParams tcm_params_;
  const TcmContext* tcm_ = nullptr;
  k3k::TcmWorkspace* workspace_ = nullptr;
  k3k::TcmAttentionGate gate_;
  std::int64_t calls_ = 0, staged_bytes_ = 0, workers_without_block_ = 0;
  std::vector<float> q_;
  k3k::AlignedBuffer<float> out_;
};

std::int64_t attention_footprint(const KeyValues& s, std::int64_t seq, std::int64_t ctx) {
  const std::int64_t d = s.integer("head_dim");
  // kernel cache + float64 reference cache (K, |K|, V) + inputs
  return ctx * s.integer("kv_heads") * d * (8 + 24 + 8) + 2 * seq * s.integer("q_heads") * d * 4;
}

KeySpec prefetch_param(std::string_view op) {
  return table_key(op, "prefetch", "software prefetch distance in bytes ahead of the K/V rows, 0 = off (Zicbop builds only)",
                   "0");
}

}  // namespace

void add_attention_ops(std::vector<OpInfo>& ops) {
  ops.push_back(OpInfo{
      "attn_prefill",
      "flash-style causal attention (QK, online softmax, PV fused; GQA; RoPE on Q in-kernel)",
      attention_shape_keys({int_key("seq", "new tokens (queries)", std::nullopt, 1, 1 << 20),
                            int_key("past", "tokens already in the cache", "0", 0, 1 << 24)},
                           true),
      {workers_param("attn_prefill"), table_key("attn_prefill", "q_tile", "query rows per task", "64"),
       table_key("attn_prefill", "kv_block", "keys per online-softmax block", "64"), prefetch_param("attn_prefill"),
       table_key("attn_prefill", "tcm", "each worker's working set (Q tile, softmax state, K/V stage) in its TCM block: auto (gated), on (skip the context gate), off (DRAM)",
                 "auto"),
       tcm_backend_param(),
       table_key("attn_prefill", "tcm_kv_blocks", "kv_block blocks of K/V staged in TCM per copy (0: as many as fit the block)", "0"),
       table_key("attn_prefill", "ctx_min", "gate: smallest context for TCM attention (tcm=auto)", "1024")},
      [](const KeyValues& s, const KeyValues&) {
        return attention_footprint(s, s.integer("seq"), s.integer("seq") + s.integer("past"));
      },
      [](const CaseInputs& in) { return std::make_unique<AttentionCase>(in, false); }});
  ops.push_back(OpInfo{
      "attn_decode",
      "decode attention for one token, split over KV heads and context chunks, online-softmax merge",
      attention_shape_keys({int_key("ctx", "context length including the new token", std::nullopt, 1, 1 << 24)}, true),
      {workers_param("attn_decode"), table_key("attn_decode", "chunk", "context tokens per task", "256"),
       prefetch_param("attn_decode")},
      [](const KeyValues& s, const KeyValues&) { return attention_footprint(s, 1, s.integer("ctx")); },
      [](const CaseInputs& in) { return std::make_unique<AttentionCase>(in, true); }});
}

}  // namespace k3runner
