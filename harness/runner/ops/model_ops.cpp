// model_pp / model_tg / model_pg: a whole model's prefill of pp tokens (after `depth` tokens
// already in the caches, llama-bench -d), tg decode steps after a pp-token prompt, or a prefill of
// pp tokens and its tg decode steps on one cache (MNN llm_bench -pg), as one timed call
// (llm_bench's pp / tg tests). The model's dimensions are shape keys
// (k3tune derives them from configs/models/NAME.toml), so a board needs no model file. Weights are
// generated (and quantised, block by block) when the case is built: outside every timed call.
// params_used() carries the per-op breakdown of the timed calls (summed over the warm-up and the
// measured calls, with their wall time to check the sum against), the weight and state sizes, the
// peak RSS and a checksum of the logits.
#include <sys/resource.h>

#include <chrono>
#include <cmath>

#include <fmt/format.h>

#include "harness/runner/errors.h"
#include "harness/runner/model/forward.h"
#include "harness/runner/model/model_check.h"
#include "harness/runner/model/model_report.h"
#include "harness/runner/model/model_tuning.h"
#include "harness/runner/model/model_weights.h"
#include "harness/runner/ops/op_lists.h"
#include "harness/runner/weight_cache.h"

namespace k3runner {
namespace {

using Clock = std::chrono::steady_clock;

enum class ModelTest { kPrefill, kDecode, kPrefillThenGenerate };

std::vector<KeySpec> model_shape_keys(ModelTest test) {
  const bool decode = test == ModelTest::kDecode;
  std::vector<KeySpec> k = {
      int_key("hidden", "hidden size (multiple of 64)", std::nullopt, 64, 1 << 16),
      int_key("intermediate", "SwiGLU intermediate size", std::nullopt, 64, 1 << 18),
      int_key("layers", "decoder layers", std::nullopt, 1, 1024),
      int_key("q_heads", "query heads (full attention)", std::nullopt, 1, 1024),
      int_key("kv_heads", "KV heads (full attention)", std::nullopt, 1, 1024),
      int_key("head_dim", "head size (full attention)", std::nullopt, 2, 1024),
      int_key("rotary_dim", "RoPE dims of a head", std::nullopt, 0, 1024),
      float_key("rope_theta", "RoPE base", std::nullopt),
      int_key("vocab", "vocabulary", std::nullopt, 1, 1 << 22),
      int_key("tied", "lm_head tied to the embedding (0/1)", "1", 0, 1),
      int_key("qk_norm", "per-head RMSNorm of Q and K (0/1)", "1", 0, 1),
      int_key("attn_gate", "attention output gate, q_proj doubled (0/1)", "0", 0, 1),
      float_key("rms_eps", "RMSNorm eps", "1e-06"),
      int_key("full_attn_interval", "layer i is full attention iff (i+1) % this == 0; 1: all", "1",
              1, 1024),
      int_key("lin_k_heads", "Gated DeltaNet key heads", "0", 0, 1024),
      int_key("lin_v_heads", "Gated DeltaNet value heads", "0", 0, 1024),
      int_key("lin_k_dim", "Gated DeltaNet key head size", "0", 0, 4096),
      int_key("lin_v_dim", "Gated DeltaNet value head size", "0", 0, 4096),
      int_key("conv_kernel", "Gated DeltaNet convolution taps", "0", 0, 16),
      int_key("pp", decode ? "prompt tokens prefilled (untimed) before decoding" : "prompt tokens",
              decode ? std::optional<std::string>("1") : std::nullopt, 1, 1 << 20)};
  if (test != ModelTest::kPrefill)
    k.push_back(int_key("tg", "decode steps (tokens generated)", std::nullopt, 1, 1 << 20));
  if (test != ModelTest::kDecode)
    k.push_back(int_key("depth", "tokens already in the caches (prefilled untimed) first", "0", 0,
                        1 << 20));
  return k;
}

std::vector<KeySpec> model_params() {
  return {workers_param(), enum_key("kv_dtype", "KV cache element type", "f16", {"f16", "f32"}),
          int_key("gdn_chunk", "Gated DeltaNet prefill chunk (tokens)", "64", 1, 1024),
          int_key("weight_seed", "seed of the synthetic weights", "1", 0, 1 << 30)};
}

k3model::ModelConfig config_from(const KeyValues& shape) {
  try {
    return k3model::ModelConfig::from_shape_values([&](const std::string& key) {
      const auto& v = shape.to_json().at(key);
      return v.is_string() ? v.get<std::string>() : v.dump();
    });
  } catch (const k3model::ModelConfigError& e) {
    throw UnsupportedShape(e.what());
  }
}

class ModelCase final : public OpCase {
 public:
  ModelCase(const CaseInputs& in, ModelTest test)
      : decode_(test == ModelTest::kDecode),
        generate_(test == ModelTest::kPrefillThenGenerate),
        config_(config_from(in.shape)),
        pp_(in.shape.integer("pp")),
        tg_(test != ModelTest::kPrefill ? in.shape.integer("tg") : 0),
        depth_(test != ModelTest::kDecode ? in.shape.integer("depth") : 0),
        pool_(pool_of_size(static_cast<int>(in.params.integer("workers")))) {
    params_.kv_dtype = in.params.text("kv_dtype") == "f32" ? k3k::KvDtype::f32 : k3k::KvDtype::f16;
    params_.gdn_prefill.chunk = static_cast<int>(in.params.integer("gdn_chunk"));
    // A tuning table the process loaded (--table, K3_TUNING_TABLE) reaches the model's Linears
    // as it reaches an engine's: decided here, once, before the forward is built.
    if (const k3k::TuningTable* table = k3k::active_tuning_table())
      tuned_linears_ = model::apply_table_to_linears(*table, config_, in.path, pp_, params_);
    const auto t0 = Clock::now();
    weights_ = cached_model_weights(
        config_, {static_cast<std::uint64_t>(in.params.integer("weight_seed")), 0}, in.path, pool_);
    weights_s_ = std::chrono::duration<double>(Clock::now() - t0).count();
    // The depth is prefilled in batches of at most max(pp, 512) tokens (the activation buffers
    // are sized by the longest batch).
    const std::int64_t batch = std::max(pp_, std::min<std::int64_t>(depth_, 512));
    fwd_ = std::make_unique<model::Forward>(config_, weights_, params_, in.path, pool_, batch,
                                            depth_ + pp_ + tg_);
    prompt_ = model::prompt_tokens(pp_, config_.vocab, in.seed);
    if (decode_) {
      fwd_->prefill(prompt_);
      fwd_->snapshot();
    } else if (depth_ > 0) {
      fwd_->prefill_in_batches(model::prompt_tokens(depth_, config_.vocab, in.seed + 2));
      fwd_->snapshot();
    }
    fwd_->timer().clear();
  }

  void run_once() override {
    const auto t0 = Clock::now();
    if (decode_) {
      fwd_->restore();
      for (std::int64_t i = 0; i < tg_; ++i) fwd_->decode(fwd_->argmax());
    } else {
      if (depth_ > 0)
        fwd_->restore();
      else
        fwd_->reset();
      fwd_->prefill(prompt_);
      if (generate_) {
        prefill_s_ += std::chrono::duration<double>(Clock::now() - t0).count();
        for (std::int64_t i = 0; i < tg_; ++i) fwd_->decode(fwd_->argmax());
      }
    }
    wall_s_ += std::chrono::duration<double>(Clock::now() - t0).count();
    ++calls_;
  }

  // Before the timed calls: decode streams every weight once per token, a prefill once per call
  // (M4 tiles reuse B). After them: the bytes the forward's kernel calls accounted (k3k/traffic.h),
  // per timed call.
  Traffic traffic() const override {
    const std::int64_t ops =
        2 * (config_.body_params() + config_.embedding_params()) * tokens_per_call();
    if (calls_ == 0) {
      const std::int64_t weight_passes = (decode_ ? 0 : 1) + tg_;
      return {weights_.decode_bytes_per_token() * weight_passes, fwd_->state_bytes(), ops, {}};
    }
    const k3k::Traffic sum = fwd_->timer().total_bytes();
    k3k::Traffic per_call;
    const auto per = [this](std::int64_t b) { return b / calls_; };
    per_call = {per(sum.weights),  per(sum.metadata), per(sum.kv_read),
                per(sum.kv_write), per(sum.state),    per(sum.activations)};
    return Traffic::of(per_call, ops);
  }
  std::int64_t tokens_per_call() const { return decode_ ? tg_ : pp_ + tg_; }

  Accuracy check(bool) override {
    Accuracy a;
    const std::int64_t weights = config_.body_params() + config_.embedding_params();
    if (weights > kCheckedWeights) {
      // The float64 forward of a large model takes minutes; its numerics are the small models'
      // (k3bench --model tiny-... --check-forward, the model tests). Here: every logit finite.
      fwd_->reset();
      const auto logits = fwd_->prefill(prompt_);
      a.reference =
          fmt::format("finite logits (the float64 forward check runs for models under {}M weights)",
                      kCheckedWeights / 1000000);
      a.checked = a.total = static_cast<std::int64_t>(logits.size());
      for (const float x : logits) a.pass = a.pass && std::isfinite(x);
    } else {
      const auto c = model::check_forward(config_, weights_, path_, pool_, params_,
                                          static_cast<int>(std::min<std::int64_t>(pp_, 64)), 4, 7);
      a.reference = "float64 forward pass (reference_forward.h): " + c.summary();
      a.checked = a.total = c.steps;
      a.max_rel_err = c.err_quantized;
      a.worst_ratio = c.err_quantized / model::kQuantizedTolerance;
      a.pass = c.pass;
      a.extra = {{"err_vs_float64_activations", c.err_unquantized},
                 {"argmax_mismatches", c.argmax_mismatches}};
    }
    if (decode_ || depth_ > 0) fwd_->restore();
    fwd_->timer().clear();
    return a;
  }

  nlohmann::json params_used() const override {
    rusage ru{};
    getrusage(RUSAGE_SELF, &ru);
    nlohmann::json j = {{"workers", pool_.size()},
                        {"kv_dtype", k3k::to_string(params_.kv_dtype)},
                        {"gdn_chunk", params_.gdn_prefill.chunk},
                        {"model", config_.shape_values()},
                        {"tokens_per_call", tokens_per_call()},
                        {"depth", decode_ ? pp_ : depth_},
                        {"weights",
                         {{"bytes", weights_.bytes()},
                          {"decode_bytes_per_token", weights_.decode_bytes_per_token()},
                          {"generation_s", weights_s_}}},
                        {"state_bytes", fwd_->state_bytes()},
                        {"peak_rss_bytes", static_cast<std::int64_t>(ru.ru_maxrss) * 1024},
                        {"logits_checksum", last_logits_checksum()}};
    if (!tuned_linears_.is_null()) j["tuned_linears"] = tuned_linears_;
    if (calls_ > 0) {
      j["breakdown"] = model::breakdown_json(fwd_->timer(), wall_s_, calls_);
      j["bytes_per_token"] = model::traffic_json(fwd_->timer().total_bytes(),
                                                 static_cast<double>(calls_ * tokens_per_call()));
    }
    if (generate_ && calls_ > 0) {
      j["prefill_s_per_call"] = prefill_s_ / double(calls_);
      j["generate_s_per_call"] = (wall_s_ - prefill_s_) / double(calls_);
    }
    return j;
  }

  std::vector<DumpArray> dump_arrays() const override { return {}; }

  // Of the last timed call's final logits (hashed here, outside the timed calls): a decode run's
  // last step depends on every earlier step through the caches and the greedy tokens fed.
  std::string last_logits_checksum() const {
    if (calls_ == 0) return "";
    model::LogitsChecksum sum;
    sum.add(fwd_->logits());
    return sum.hex();
  }

 private:
  static constexpr std::int64_t kCheckedWeights = 50'000'000;
  bool decode_, generate_;
  k3model::ModelConfig config_;
  std::int64_t pp_, tg_, depth_;
  k3k::WorkerPool& pool_;
  model::ModelParams params_;
  model::ModelWeights weights_;
  std::unique_ptr<model::Forward> fwd_;
  std::vector<std::int32_t> prompt_;
  nlohmann::json tuned_linears_;  // matrix -> table entry (null: no table loaded)
  double weights_s_ = 0, wall_s_ = 0, prefill_s_ = 0;
  std::int64_t calls_ = 0;
};

std::int64_t model_footprint(const KeyValues& s, ModelTest test) {
  const k3model::ModelConfig c = config_from(s);
  const std::int64_t tokens = s.integer("pp") +
                              (test != ModelTest::kPrefill ? s.integer("tg") : 0) +
                              (test != ModelTest::kDecode ? s.integer("depth") : 0);
  const std::int64_t weights = (c.body_params() + c.embedding_params()) * 5 / 8;
  const std::int64_t kv = std::int64_t(c.full_layers()) * 2 * c.kv_dim() * tokens * 4;
  const std::int64_t acts =
      s.integer("pp") * (8 * c.hidden + 4 * c.intermediate + 2 * c.conv_dim()) * 4;
  return weights + kv + acts;
}

}  // namespace

void add_model_ops(std::vector<OpInfo>& ops) {
  const auto add = [&ops](const char* name, const char* help, ModelTest test) {
    ops.push_back(
        OpInfo{name, help, model_shape_keys(test), model_params(),
               [test](const KeyValues& s, const KeyValues&) { return model_footprint(s, test); },
               [test](const CaseInputs& in) { return std::make_unique<ModelCase>(in, test); }});
  };
  add("model_pp",
      "whole-model prefill of pp tokens (embedding .. last token's logits) after depth tokens in "
      "the caches, synthetic W4B64 weights",
      ModelTest::kPrefill);
  add("model_tg",
      "whole-model decode of tg tokens (greedy) after a pp-token prompt, synthetic W4B64 weights",
      ModelTest::kDecode);
  add("model_pg",
      "whole-model prefill of pp tokens then tg decode steps on the same caches, after depth "
      "tokens, synthetic W4B64 weights",
      ModelTest::kPrefillThenGenerate);
}

}  // namespace k3runner
