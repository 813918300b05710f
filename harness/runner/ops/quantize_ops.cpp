// quant_pack_prefill / quant_pack_decode: the fused dynamic quantisation + A pack on its own.
#include <cmath>

#include <fmt/format.h>

#include "harness/runner/errors.h"
#include "k3k/quantize.h"
#include "k3k/reference/linear.h"
#include "harness/runner/ops/op_lists.h"
#include "harness/runner/ops/op_support.h"

namespace k3runner {
namespace {

using Type = KeySpec::Type;

class QuantizeCase final : public OpCase {
 public:
  QuantizeCase(const CaseInputs& in, bool decode)
      : decode_(decode),
        m_(decode ? 1 : in.shape.integer("m")),
        k_(in.shape.integer("k")),
        pool_(pool_of_size(decode ? 1 : static_cast<int>(in.params.integer("workers")))) {
    if (k_ % 64 != 0) throw UnsupportedShape(fmt::format("shape: k={} is not a multiple of 64", k_));
    a_ = make_activations(m_, k_, in.seed + 1);
    act_ = k3k::make_packed_activations(m_, k_, decode ? k3k::ActivationLayout::kRowK256
                                                       : k3k::ActivationLayout::kRowsM4);
  }

  void run_once() override {
    if (decode_) k3k::quantize_pack_decode(path_, a_.data(), act_);
    else k3k::quantize_pack_prefill(path_, a_.data(), act_, pool_);
  }

  Traffic traffic() const override {
    return Traffic::of(k3k::quantize_pack_traffic(act_), 3 * m_ * k_);
  }

  // Codes must equal round-half-even(a / sa) computed in float64, except where that quotient lies
  // within 2^-16 of a rounding tie: the kernel forms a * fl(127/absmax) in float, which differs from
  // the exact quotient by at most 2u relative, i.e. < 127 * 2^-23 < 2^-16 absolute. Block sums
  // must equal the sums of the kernel's own codes exactly; sa must be absmax/127 rounded once.
  Accuracy check(bool) override {
    run_once();
    const auto ref = k3k::reference::quantize_rows(a_.data(), m_, k_);
    Accuracy acc;
    acc.reference = "float64 round(a / (absmax/127)); exact block sums";
    acc.total = acc.checked = m_ * k_;
    std::int64_t tie_differences = 0, bad = 0, bad_sums = 0, bad_scales = 0;
    for (std::int64_t r = 0; r < m_; ++r) {
      if (std::fabs(act_.scale[r] - ref.scale[r]) > 0x1.0p-24 * ref.scale[r]) ++bad_scales;
      for (std::int64_t b = 0; b < k_ / 64; ++b) {
        std::int32_t s = 0;
        for (int j = 0; j < 64; ++j) s += act_.code(r, b * 64 + j);
        if (s != act_.block_sum[r * (k_ / 64) + b]) ++bad_sums;
      }
      for (std::int64_t i = 0; i < k_; ++i) {
        const int got = act_.code(r, i), want = ref.codes[r * k_ + i];
        if (got == want) continue;
        const double x = ref.unrounded[r * k_ + i];
        const bool near_tie = std::fabs(std::fabs(x - std::trunc(x)) - 0.5) < 0x1.0p-16;
        if (std::abs(got - want) == 1 && near_tie) ++tie_differences;
        else ++bad;
        acc.max_abs_err = std::max<double>(acc.max_abs_err, std::abs(got - want));
      }
    }
    acc.pass = bad == 0 && bad_sums == 0 && bad_scales == 0;
    acc.worst_ratio = acc.pass ? 0.0 : 1.0 + double(bad + bad_sums + bad_scales);
    acc.extra = {{"code_mismatches", bad},
                 {"tie_rounding_differences", tie_differences},
                 {"block_sum_mismatches", bad_sums},
                 {"scale_mismatches", bad_scales}};
    return acc;
  }

  nlohmann::json params_used() const override {
    return {{"workers", decode_ ? 1 : pool_.size()},
            {"layout", decode_ ? "k256_row" : "rows_m4"}};
  }

  std::vector<std::string> output_names() const override {
    return {"activation_codes", "activation_scale", "activation_block_sum"};
  }

  std::vector<DumpArray> dump_arrays() const override {
    codes_ = k3k::reference::unpack_codes(act_);
    return {dump_of("activations", "f32", {m_, k_}, "row-major [M][K]", a_.data(), m_ * k_),
            dump_of("activation_codes", "i8", {m_, k_}, "row-major [M][K]", codes_.data(), m_ * k_),
            dump_of("activation_scale", "f32", {m_}, "[M] sa = absmax/127", act_.scale.data(), m_),
            dump_of("activation_block_sum", "i32", {m_, k_ / 64}, "[M][K/64]", act_.block_sum.data(),
                    m_ * k_ / 64)};
  }

 private:
  bool decode_;
  std::int64_t m_, k_;
  k3k::WorkerPool& pool_;
  k3k::AlignedBuffer<float> a_;
  k3k::PackedActivations act_;
  mutable std::vector<std::int8_t> codes_;
};

}  // namespace

void add_quantize_ops(std::vector<OpInfo>& ops) {
  ops.push_back(OpInfo{
      "quant_pack_prefill",
      "fused dynamic int8 quantisation + M4 A pack + per-block sums (prefill)",
      {int_key("m", "rows", std::nullopt, 1, 1 << 20), int_key("k", "columns, multiple of 64", std::nullopt, 1, 1 << 20)},
      {workers_param()},
      [](const KeyValues& s, const KeyValues&) { return s.integer("m") * s.integer("k") * 6; },
      [](const CaseInputs& in) { return std::make_unique<QuantizeCase>(in, false); }});
  ops.push_back(OpInfo{
      "quant_pack_decode",
      "fused dynamic int8 quantisation + K256 A pack + per-block sums (decode, one row)",
      {int_key("k", "columns, multiple of 64", std::nullopt, 1, 1 << 24)},
      {},
      [](const KeyValues& s, const KeyValues&) { return s.integer("k") * 6; },
      [](const CaseInputs& in) { return std::make_unique<QuantizeCase>(in, true); }});
}

}  // namespace k3runner
