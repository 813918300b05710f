// kv_append: bulk (prefill) or one-token (tokens=1, decode) append; K rotated on write.
#include <algorithm>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "harness/runner/errors.h"
#include "k3k/kv_cache.h"
#include "k3k/reference/attention.h"
#include "harness/runner/ops/attention_shape.h"
#include "k3k/attention.h"
#include "harness/runner/ops/op_lists.h"
#include "harness/runner/ops/op_support.h"

namespace k3runner {
namespace {

class KvAppendCase final : public OpCase {
 public:
  explicit KvAppendCase(const CaseInputs& in)
      : tokens_(in.shape.integer("tokens")),
        past_(in.shape.integer("past")),
        config_(kv_config_from(in.shape, capacity_of(in), in.params.integer("ring") != 0)),
        cache_(config_),
        pool_(pool_of_size(static_cast<int>(in.params.integer("workers")))) {
    if (config_.ring && tokens_ > config_.capacity) {
      throw UnsupportedShape(fmt::format("shape: tokens={} exceeds the ring capacity {}", tokens_, config_.capacity));
    }
    if (!config_.ring && past_ + tokens_ > config_.capacity) {
      throw UnsupportedShape(fmt::format("shape: past+tokens={} exceeds capacity {} (use ring=1)", past_ + tokens_,
                                         config_.capacity));
    }
    const std::int64_t row = std::int64_t(config_.n_kv_heads) * config_.head_dim;
    k_ = attention_inputs(tokens_ * row, in.seed + 1);
    v_ = attention_inputs(tokens_ * row, in.seed + 2);
    fill_storage(in.seed + 3);
  }

  // Every slot of the cache holds seeded values before the first append (the earlier tokens and
  // the free slots alike), kept as the dump's "before": an append that writes outside its slots,
  // or misses one, shows in a comparison with the cache after the call.
  void fill_storage(std::uint64_t seed) {
    const auto k = attention_inputs(std::int64_t(cache_.k_elements()), seed);
    const auto v = attention_inputs(std::int64_t(cache_.v_elements()), seed + 1);
    if (config_.dtype == k3k::KvDtype::f32) {
      std::copy(k.begin(), k.end(), cache_.k_f32());
      std::copy(v.begin(), v.end(), cache_.v_f32());
    } else {
      std::transform(k.begin(), k.end(), cache_.k_f16(), k3k::fp32_to_fp16);
      std::transform(v.begin(), v.end(), cache_.v_f16(), k3k::fp32_to_fp16);
    }
    before_.reserve(2);
    for (DumpArray& a : kv_cache_dump(cache_)) {
      auto& copy = before_.emplace_back(static_cast<const char*>(a.data),
                                        static_cast<const char*>(a.data) + a.bytes);
      a.name += "_before";
      a.layout += fmt::format(
          "; before the call (every slot seeded; the call writes the slots of positions {}..{} "
          "only)",
          past_, past_ + tokens_ - 1);
      a.data = copy.data();
      before_dump_.push_back(std::move(a));
    }
  }

  static std::int64_t capacity_of(const CaseInputs& in) {
    const auto c = in.params.integer("capacity");
    return c > 0 ? c : in.shape.integer("past") + in.shape.integer("tokens");
  }

  void run_once() override {
    cache_.set_length(past_);
    if (tokens_ == 1) k3k::kv_append_one(path_, cache_, k_, v_, pool_);
    else k3k::kv_append(path_, cache_, k_, v_, tokens_, pool_);
  }

  Traffic traffic() const override {
    return Traffic::of(k3k::kv_append_traffic(cache_, tokens_),
                       3 * tokens_ * config_.n_kv_heads * config_.rope.rotary_dim);
  }

  // Stored K vs float64 RoPE of the same input (bound from the reference); stored V bit-exact
  // (fp32 copy, or the fp16 rounding of the input).
  Accuracy check(bool) override {
    run_once();
    const int d = config_.head_dim, h = config_.n_kv_heads;
    std::vector<double> ref = k3k::reference::rope(k_, tokens_, h, d, past_, config_.rope);
    std::vector<double> bound = k3k::reference::kv_stored_k_bound(k_, tokens_, h, d, past_, config_.rope, config_.dtype);
    std::vector<float> got;
    got.reserve(2 * k_.size());
    for (int which = 0; which < 2; ++which) {
      for (std::int64_t t = 0; t < tokens_; ++t) {
        for (int head = 0; head < h; ++head) {
          // K down its key block's column (stride key_block), V along its row.
          const std::int64_t slot = cache_.slot(past_ + t);
          const std::size_t off = which == 0 ? cache_.k_offset(head, slot) : cache_.v_offset(head, slot);
          const std::size_t step = which == 0 ? std::size_t(cache_.key_block()) : 1;
          for (int i = 0; i < d; ++i) {
            float x;
            if (config_.dtype == k3k::KvDtype::f32) x = (which == 0 ? cache_.k_f32() : cache_.v_f32())[off + i * step];
            else x = k3k::fp16_to_fp32((which == 0 ? cache_.k_f16() : cache_.v_f16())[off + i * step]);
            got.push_back(x);
          }
        }
      }
    }
    for (float x : v_) {
      ref.push_back(config_.dtype == k3k::KvDtype::f32 ? x : k3k::fp16_to_fp32(k3k::fp32_to_fp16(x)));
      bound.push_back(0.0);
    }
    return compare_outputs(got, ref, bound, "float64 RoPE of K; V bit-exact", std::int64_t(got.size()));
  }

  nlohmann::json params_used() const override {
    return {{"workers", pool_.size()}, {"ring", config_.ring}, {"capacity", config_.capacity},
            {"rotary_dim", config_.rope.rotary_dim}, {"append", tokens_ == 1 ? "one-token" : "bulk"}};
  }

  // The appended rows, the cache as laid out before the first call, and after the append (the
  // op's output).
  std::vector<DumpArray> dump_arrays() const override {
    const std::int64_t n = std::int64_t(k_.size());
    std::vector<DumpArray> v = {
        dump_of("k_new", "f32", {tokens_, config_.n_kv_heads, config_.head_dim},
                fmt::format("[tokens][kv_heads][head_dim] unrotated, token t at position {} + t", past_),
                k_.data(), n),
        dump_of("v_new", "f32", {tokens_, config_.n_kv_heads, config_.head_dim}, "[tokens][kv_heads][head_dim]",
                v_.data(), n)};
    for (const DumpArray& a : before_dump_) v.push_back(a);
    for (DumpArray& a : kv_cache_dump(cache_)) {
      a.layout += "; after the call";
      v.push_back(std::move(a));
    }
    return v;
  }

 private:
  std::int64_t tokens_, past_;
  k3k::KvCacheConfig config_;
  k3k::KvCache cache_;
  k3k::WorkerPool& pool_;
  std::vector<float> k_, v_;
  std::vector<std::vector<char>> before_;  // the cache's storage before the first call
  std::vector<DumpArray> before_dump_;     // ... as dump arrays (their data: before_)
};

}  // namespace

void add_kv_cache_ops(std::vector<OpInfo>& ops) {
  ops.push_back(OpInfo{
      "kv_append",
      "KV cache append (bulk for prefill, one token for decode); K rotated with RoPE on write",
      attention_shape_keys({int_key("tokens", "tokens appended per call (1: decode path)", std::nullopt, 1, 1 << 20),
                            int_key("past", "tokens already in the cache", "0", 0, 1 << 24)},
                           false),
      {workers_param(), int_key("ring", "ring-buffer cache (0/1)", "0", 0, 1),
       int_key("capacity", "cache capacity in tokens (0: past + tokens)", "0", 0, 1 << 24)},
      [](const KeyValues& s, const KeyValues& p) {
        const std::int64_t cap = p.integer("capacity") > 0 ? p.integer("capacity") : s.integer("past") + s.integer("tokens");
        return cap * s.integer("kv_heads") * s.integer("head_dim") * 8 +
               s.integer("tokens") * s.integer("kv_heads") * s.integer("head_dim") * 24;
      },
      [](const CaseInputs& in) { return std::make_unique<KvAppendCase>(in); }});
}

}  // namespace k3runner
