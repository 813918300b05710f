// Small ops needed for model-level runs: rmsnorm, swiglu, residual_add, embedding (W4B64 rows).
#include <fmt/format.h>

#include "harness/runner/errors.h"
#include "k3k/embedding.h"
#include "k3k/reference/linear.h"
#include "k3k/reference/small_ops.h"
#include "k3k/seeded_random.h"
#include "k3k/small_ops.h"
#include "harness/runner/ops/op_lists.h"
#include "harness/runner/ops/op_support.h"
#include "harness/runner/weight_cache.h"

namespace k3runner {
namespace {

// rmsnorm / swiglu / residual_add over rows x dim floats.
class ElementwiseCase final : public OpCase {
 public:
  ElementwiseCase(const CaseInputs& in, std::string op)
      : op_(std::move(op)),
        rows_(in.shape.integer("rows")),
        dim_(in.shape.integer("dim")),
        pool_(pool_of_size(static_cast<int>(in.params.integer("workers")))) {
    x_ = make_activations(rows_, dim_, in.seed + 1);
    y_ = op_ == "rmsnorm" ? make_normal(dim_, 0.2, in.seed + 2) : make_activations(rows_, dim_, in.seed + 2);
    if (op_ == "rmsnorm") {
      for (auto& w : y_) w += 1.0f;  // norm weights sit around 1
    }
    out_ = k3k::AlignedBuffer<float>(static_cast<std::size_t>(rows_ * dim_));
  }

  void run_once() override {
    if (op_ == "rmsnorm") k3k::rmsnorm(path_, x_.span(), y_.span(), out_.span(), rows_, static_cast<int>(dim_), kEps, pool_);
    else if (op_ == "swiglu") k3k::swiglu(path_, x_.span(), y_.span(), out_.span(), rows_, dim_, pool_);
    else k3k::residual_add(path_, x_.span(), y_.span(), out_.span(), rows_, dim_, pool_);
  }

  Traffic traffic() const override {
    const std::int64_t n = rows_ * dim_;
    const k3k::Traffic bytes =
        op_ == "rmsnorm" ? k3k::rowwise_traffic(n, 1, dim_) : k3k::rowwise_traffic(n, 2);
    return Traffic::of(bytes, op_ == "rmsnorm" ? 4 * n : op_ == "swiglu" ? 5 * n : n);
  }

  Accuracy check(bool) override {
    run_once();
    std::vector<double> ref, bound;
    if (op_ == "rmsnorm") {
      ref = k3k::reference::rmsnorm(x_.span(), y_.span(), rows_, static_cast<int>(dim_), kEps);
      bound = k3k::reference::rmsnorm_bound(ref, static_cast<int>(dim_));
    } else if (op_ == "swiglu") {
      ref = k3k::reference::swiglu(x_.span(), y_.span());
      bound = k3k::reference::swiglu_bound(x_.span(), y_.span(), ref);
    } else {
      ref = k3k::reference::residual_add(x_.span(), y_.span());
      bound = k3k::reference::residual_add_bound(ref);
    }
    return compare_outputs(out_.span(), ref, bound, "float64 " + op_, rows_ * dim_);
  }

  nlohmann::json params_used() const override {
    nlohmann::json j = {{"workers", pool_.size()}};
    if (op_ == "rmsnorm")
      j["eps"] = kEps;  // what the call is given (a dump's recomputation needs it)
    return j;
  }

  std::vector<DumpArray> dump_arrays() const override {
    const std::int64_t n = rows_ * dim_;
    const bool norm = op_ == "rmsnorm";
    return {dump_of(norm ? "x" : op_ == "swiglu" ? "gate" : "a", "f32", {rows_, dim_}, "row-major", x_.data(), n),
            dump_of(norm ? "weight" : op_ == "swiglu" ? "up" : "b", "f32",
                    norm ? std::vector<std::int64_t>{dim_} : std::vector<std::int64_t>{rows_, dim_}, "row-major",
                    y_.data(), norm ? dim_ : n),
            dump_of("output", "f32", {rows_, dim_}, "row-major", out_.data(), n)};
  }

 private:
  static constexpr float kEps = 1e-6f;
  std::string op_;
  std::int64_t rows_, dim_;
  k3k::WorkerPool& pool_;
  k3k::AlignedBuffer<float> x_, y_, out_;
};

class EmbeddingCase final : public OpCase {
 public:
  explicit EmbeddingCase(const CaseInputs& in)
      : tokens_(in.shape.integer("tokens")),
        vocab_(in.shape.integer("vocab")),
        dim_(in.shape.integer("dim")),
        pool_(pool_of_size(static_cast<int>(in.params.integer("workers")))) {
    if (dim_ % 64 != 0) throw UnsupportedShape(fmt::format("shape: dim={} is not a multiple of 64", dim_));
    storage_ = synthetic_w4b64(vocab_, dim_, in.seed);
    table_ = k3k::pack_w4b64_generic(storage_);
    k3k::SeededRandom rng(in.seed + 1);
    ids_.resize(static_cast<std::size_t>(tokens_));
    for (auto& id : ids_) id = static_cast<std::int32_t>(rng.next() % static_cast<std::uint64_t>(vocab_));
    out_ = k3k::AlignedBuffer<float>(static_cast<std::size_t>(tokens_ * dim_));
  }

  void run_once() override {
    k3k::embedding_lookup_w4b64(path_, table_, ids_.data(), tokens_, out_.data(), pool_);
  }
  Traffic traffic() const override {
    return Traffic::of(k3k::embedding_traffic(table_, tokens_), 2 * tokens_ * dim_);
  }
  Accuracy check(bool) override {
    run_once();
    const auto ref = k3k::reference::embedding_lookup(storage_, ids_.data(), tokens_);
    return compare_outputs(out_.span(), ref.y, ref.bound, "float64 dequantised W4B64 rows", tokens_ * dim_);
  }
  nlohmann::json params_used() const override { return {{"workers", pool_.size()}}; }
  std::vector<DumpArray> dump_arrays() const override {
    return {dump_of("token_ids", "i32", {tokens_}, "[T]", ids_.data(), tokens_),
            dump_of("weight_codes", "u8", {vocab_, dim_ / 2}, "MNN W4 [vocab][dim/2], first element in the high nibble",
                    storage_.codes.data(), vocab_ * dim_ / 2),
            dump_of("weight_alpha", "f32", {vocab_, dim_ / 64, 2}, "(beta, scale) per (row, block)",
                    storage_.alpha.data(), vocab_ * dim_ / 64 * 2),
            dump_of("output", "f32", {tokens_, dim_}, "row-major [T][dim]", out_.data(), tokens_ * dim_)};
  }

 private:
  std::int64_t tokens_, vocab_, dim_;
  k3k::WorkerPool& pool_;
  k3k::W4B64Storage storage_;
  k3k::W4B64Packed table_;
  std::vector<std::int32_t> ids_;
  k3k::AlignedBuffer<float> out_;
};

}  // namespace

void add_small_ops(std::vector<OpInfo>& ops) {
  const std::vector<KeySpec> rows_dim = {int_key("rows", "rows (tokens, or tokens x heads for QK norm)", std::nullopt, 1, 1 << 24),
                                         int_key("dim", "elements per row", std::nullopt, 1, 1 << 20)};
  auto footprint = [](const KeyValues& s, const KeyValues&) { return 3 * s.integer("rows") * s.integer("dim") * 4; };
  for (const char* name : {"rmsnorm", "swiglu", "residual_add"}) {
    const std::string op = name;
    const std::string description =
        op == "rmsnorm" ? "RMSNorm y = x / sqrt(mean(x^2) + eps) * w (also per-head QK norm)"
        : op == "swiglu" ? "SwiGLU out = silu(gate) * up"
                         : "residual add out = a + b";
    ops.push_back(OpInfo{op, description, rows_dim, {workers_param()}, footprint,
                         [op](const CaseInputs& in) { return std::make_unique<ElementwiseCase>(in, op); }});
  }
  ops.push_back(OpInfo{
      "embedding",
      "embedding-row lookup from a W4B64 table (tied embeddings), dequantised to float",
      {int_key("tokens", "token ids looked up", std::nullopt, 1, 1 << 20),
       int_key("vocab", "table rows", std::nullopt, 1, 1 << 20),
       int_key("dim", "hidden size, multiple of 64", std::nullopt, 1, 1 << 16)},
      {workers_param()},
      [](const KeyValues& s, const KeyValues&) {
        return s.integer("vocab") * s.integer("dim") * 6 + s.integer("tokens") * s.integer("dim") * 4;
      },
      [](const CaseInputs& in) { return std::make_unique<EmbeddingCase>(in); }});
}

}  // namespace k3runner
