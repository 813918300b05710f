// linear_prefill / linear_decode: W4B64-asymmetric Linear including the fused dynamic
// quantisation of the activations (the timed call is what a model layer pays).
#include <algorithm>
#include <cstdlib>
#include <cstring>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "harness/runner/errors.h"
#include "harness/runner/ops/op_lists.h"
#include "harness/runner/ops/op_support.h"
#include "harness/runner/run_settings.h"
#include "harness/runner/tcm_context.h"
#include "harness/runner/weight_cache.h"
#include "k3k/linear.h"
#include "k3k/quantize.h"
#include "k3k/reference/linear.h"
#include "k3k/tcm_linear.h"

namespace k3runner {
namespace {

using Type = KeySpec::Type;

std::int64_t last_level_cache_bytes() {
  // The largest "size" among cpu0's caches in sysfs; 32 MiB when unknown.
  std::int64_t best = 0;
  for (int i = 0; i < 8; ++i) {
    FILE* f =
        std::fopen(fmt::format("/sys/devices/system/cpu/cpu0/cache/index{}/size", i).c_str(), "r");
    if (!f) continue;
    long v = 0;
    char unit = 0;
    if (std::fscanf(f, "%ld%c", &v, &unit) >= 1) {
      std::int64_t bytes = v * (unit == 'K' ? 1024 : unit == 'M' ? 1024 * 1024 : 1);
      best = std::max(best, bytes);
    }
    std::fclose(f);
  }
  return best > 0 ? best : 32ll << 20;
}

class LinearCase final : public OpCase {
 public:
  LinearCase(const CaseInputs& in, bool decode)
      : decode_(decode),
        m_(decode ? 1 : in.shape.integer("m")),
        n_(in.shape.integer("n")),
        k_(in.shape.integer("k")),
        pool_(pool_of_size(static_cast<int>(in.params.integer("workers")))) {
    if (k_ % k3k::kW4BlockK != 0) {
      throw UnsupportedShape(fmt::format("shape: k={} is not a multiple of 64 (W4B64 blocks)", k_));
    }
    tiling_.tile_n = static_cast<int>(in.params.integer("tile_n"));
    configure_microkernel(in.params, in.path, decode);
    ep_.layout =
        in.params.text("layout") == "c4" ? k3k::OutputLayout::kC4 : k3k::OutputLayout::kRowMajor;
    const bool with_bias = in.params.integer("bias") != 0;
    const bool with_residual = in.params.integer("residual") != 0;
    if (in.params.integer("clamp") != 0) {
      ep_.clamp_min = -4.0f;  // a visible clamp: outputs here are O(1-10)
      ep_.clamp_max = 4.0f;
    }

    if (decode) {
      configure_tcm(in.params);
      configure_accumulation(in.params, in.path);
    }

    seed_ = in.seed;
    const char* fault = std::getenv("K3BENCH_FAULT");
    throw_in_worker_ = fault != nullptr && std::string(fault) == "throw-in-worker";
    // Decode streams its weights from DRAM in a model; rotating among copies whose total exceeds
    // the last-level cache keeps this benchmark from reading them from cache instead. The copies
    // come mapped from the weight cache's rotation file (weight_load = mmap) or are made in this
    // process (read: the first read from the packed cache, the others copied from it); the storage
    // form (for the accuracy check and --dump) is loaded only when asked for.
    auto repack = [&](k3k::W4B64Packed w) {
      return k3k::pack_w4b64_for(in.path, std::move(w), weight_rows_);
    };
    const k3k::W4B64Layout layout = layout_for(in.path);
    copies_ = in.params.integer("copies");
    if (copies_ == 0) {
      const std::int64_t bytes = k3k::W4B64Packed::packed_bytes(n_, k_, weight_rows_);
      copies_ = decode ? std::max<std::int64_t>(1, 2 * last_level_cache_bytes() / bytes + 1) : 1;
    }
    // A decode matrix larger than the cache (lm_head: one copy of 82 MiB) is mapped too: read into
    // this process it cost ~0.1 s of set-up per process, the largest part of a model sweep's.
    if ((copies_ > 1 || decode) && run_settings().weight_load == "mmap") {
      weights_ = synthetic_w4b64_rotation(n_, k_, in.seed, layout, weight_rows_, copies_, repack);
    }
    if (weights_.empty()) {
      weights_.push_back(synthetic_w4b64_packed(n_, k_, in.seed, layout, weight_rows_, repack));
      weights_.reserve(static_cast<std::size_t>(copies_));
      for (std::int64_t c = 1; c < copies_; ++c) weights_.push_back(weights_.front().deep_copy());
    }

    a_ = make_activations(m_, k_, in.seed + 1);
    if (with_bias) bias_ = make_normal(n_, 0.5, in.seed + 2);
    const std::int64_t out_elems = k3k::output_elements(ep_.layout, m_, n_);
    if (with_residual) {
      residual_ = make_normal(out_elems, 1.0, in.seed + 3);
      zero_c4_pad_lanes(residual_.data());  // a C4 input as its layout says: pad lanes 0
    }
    ep_.bias = with_bias ? bias_.data() : nullptr;
    ep_.residual = with_residual ? residual_.data() : nullptr;
    out_ = k3k::AlignedBuffer<float>(static_cast<std::size_t>(out_elems));
    act_ = k3k::make_packed_activations(
        m_, k_, decode ? k3k::ActivationLayout::kRowK256 : k3k::ActivationLayout::kRowsM4);
  }

  void run_once() override {
    const k3k::W4B64Packed& w = weights_[static_cast<std::size_t>(next_copy_)];
    next_copy_ = (next_copy_ + 1) % copies_;
    if (throw_in_worker_ && calls_ >= 2) throw_from_a_worker();  // after the check and a warm-up
    if (decode_) {
      k3k::quantize_pack_decode(path_, a_.data(), act_);
      if (fp16_accumulation_) {
        run_fp16_block_scale(w);
        return;
      }
      // Decided once (the first call is the untimed accuracy check): the gate is per shape, and
      // every weight copy has the same shape.
      if (calls_ == 0)
        gate_ = k3k::decide_tcm_decode(path_, w, workspace_, tcm_params_, pool_.size());
      k3k::TcmPipelineStats stats;
      k3k::LinearDecodeOptions options;
      options.tcm_workspace = workspace_;
      options.tcm_params = &tcm_params_;
      options.tcm_gate = &gate_;
      options.tcm_stats = &stats;
      k3k::linear_decode_w4b64(path_, act_, w, ep_, out_.data(), pool_, tiling_, options);
      ++calls_;
      totals_.copy_seconds += stats.copy_seconds;
      totals_.compute_seconds += stats.compute_seconds;
      totals_.wait_seconds += stats.wait_seconds;
      totals_.bytes_copied += stats.bytes_copied;
      totals_.workers_without_block += stats.workers_without_block;
    } else {
      k3k::quantize_pack_prefill(path_, a_.data(), act_, pool_);
      k3k::linear_prefill_w4b64(path_, act_, w, ep_, out_.data(), pool_, tiling_);
    }
  }

  // The timed call: the activation quantisation, then the Linear over one weight copy.
  Traffic traffic() const override {
    k3k::Traffic bytes = k3k::quantize_pack_traffic(act_);
    bytes += k3k::linear_traffic(act_, weights_.front(), ep_);
    return Traffic::of(bytes, 2 * m_ * n_ * k_);
  }

  Accuracy check(bool full) override {
    next_copy_ = 0;
    run_once();
    // Fault injection for the runner's own tests (like SQLite's test hooks): proves that a wrong
    // output is caught and reported with the accuracy exit code.
    const char* fault = std::getenv("K3BENCH_FAULT");
    const bool perturbed = fault != nullptr && std::string(fault) == "perturb-output";
    if (perturbed) out_[0] += 1.0f;
    const auto rows = rows_to_check(m_, full);
    const auto all_codes = k3k::reference::unpack_codes(act_);
    std::vector<std::int8_t> codes;
    std::vector<float> sa, residual_rows, a_rows;
    const auto out_rm = k3k::reference::to_row_major(out_.data(), ep_.layout, m_, n_);
    std::vector<float> res_rm;
    if (ep_.residual) res_rm = k3k::reference::to_row_major(ep_.residual, ep_.layout, m_, n_);
    std::vector<float> got;
    for (auto r : rows) {
      codes.insert(codes.end(), all_codes.begin() + r * k_, all_codes.begin() + (r + 1) * k_);
      sa.push_back(act_.scale[static_cast<std::size_t>(r)]);
      a_rows.insert(a_rows.end(), a_.begin() + r * k_, a_.begin() + (r + 1) * k_);
      got.insert(got.end(), out_rm.begin() + r * n_, out_rm.begin() + (r + 1) * n_);
      if (ep_.residual)
        residual_rows.insert(residual_rows.end(), res_rm.begin() + r * n_,
                             res_rm.begin() + (r + 1) * n_);
    }
    const auto nrows = static_cast<std::int64_t>(rows.size());
    const auto ref = k3k::reference::linear_w4b64(
        storage(), codes.data(), sa.data(), nrows, ep_.bias,
        ep_.residual ? residual_rows.data() : nullptr, ep_.clamp_min, ep_.clamp_max);
    std::vector<double> bound = ref.bound;
    if (fp16_accumulation_) add_fp16_accumulation_bound(codes, sa, rows, bound);
    Accuracy acc = compare_outputs(
        got, ref.y, bound, "float64 dequantised W4B64 on the same int8 activations", m_ * n_);
    // Information only: the whole W4A8 scheme against float activations (no epilogue terms).
    if (!ep_.bias && !ep_.residual && ep_.clamp_max == INFINITY) {
      const auto exact =
          k3k::reference::linear_unquantized_activations(storage(), a_rows.data(), nrows);
      double max_err = 0.0, max_ref = 0.0;
      for (std::size_t i = 0; i < exact.size(); ++i) {
        max_err = std::max(max_err, std::fabs(got[i] - exact[i]));
        max_ref = std::max(max_ref, std::fabs(exact[i]));
      }
      acc.extra["w4a8_vs_float_activations"] = {{"max_abs_err", max_err}, {"max_abs_ref", max_ref}};
    }
    acc.extra["checked_rows"] = rows;
    if (perturbed) acc.extra["fault_injected"] = "perturb-output";
    return acc;
  }

  nlohmann::json params_used() const override {
    return {
        {"workers", pool_.size()},
        {"tile_n", tiling_.tile_n},
        {"layout", ep_.layout == k3k::OutputLayout::kC4 ? "c4" : "rowmajor"},
        {"bias", ep_.bias != nullptr},
        {"residual", ep_.residual != nullptr},
        {"clamp", ep_.clamp_max != INFINITY ? nlohmann::json::array({ep_.clamp_min, ep_.clamp_max})
                                            : nlohmann::json(nullptr)},
        {"copies", copies_},
        {"weight_layout", k3k::to_string(weights_.front().layout)},
        {"weight_rows", weights_.front().row_tile},
        {"ukernel", ukernel_name()},
        {"prefetch", tiling_.prefetch_bytes},
        {"rows_per_task", decode_ ? 1 : k3k::kPrefillRowsPerTask},
        {"accumulate", fp16_accumulation_ ? "fp16 (IME2 .hp block scale)" : "int32"},
        {"timed_call", "quantize_pack + linear (fused dynamic activation quantisation included)"},
        {"tcm", tcm_json()}};
  }

  int rotation() const override { return static_cast<int>(copies_); }

  // Fault injection for the runner's own tests (K3BENCH_FAULT=throw-in-worker): a timed call
  // whose last worker throws -- on a pool thread when there are two or more -- must end the run
  // as an internal error (exit 5, one line), on every build, not abort it.
  void throw_from_a_worker() {
    const int last = pool_.size() - 1;
    pool_.run_each(pool_.size(), [last](int worker) {
      if (worker == last)
        throw std::runtime_error(fmt::format(
            "K3BENCH_FAULT=throw-in-worker: worker {} threw during a timed call", worker));
    });
  }

  // MNN's C4 keeps the lanes past N of the last group of 4 at 0 (k3k::OutputLayout::kC4).
  void zero_c4_pad_lanes(float* x) const {
    if (ep_.layout != k3k::OutputLayout::kC4 || n_ % 4 == 0) return;
    const std::int64_t last_group = n_ / 4;
    for (std::int64_t m = 0; m < m_; ++m)
      for (std::int64_t lane = n_ % 4; lane < 4; ++lane) x[(last_group * m_ + m) * 4 + lane] = 0.0f;
  }

  std::vector<DumpArray> dump_arrays() const override {
    a_codes_ = k3k::reference::unpack_codes(act_);
    const std::string out_layout = ep_.layout == k3k::OutputLayout::kC4
                                       ? "MNN C4: [ceil(N/4)][M][4], pad lanes 0"
                                       : "row-major [M][N]";
    const std::int64_t out_elems = k3k::output_elements(ep_.layout, m_, n_);
    std::vector<DumpArray> v = {
        dump_of("activations", "f32", {m_, k_}, "row-major [M][K]", a_.data(), m_ * k_),
        dump_of("weight_codes", "u8", {n_, k_ / 2},
                "MNN W4: row-major [N][K/2], two 4-bit codes per byte, first (even k) in the high "
                "nibble",
                storage().codes.data(), n_ * k_ / 2),
        dump_of("weight_alpha", "f32", {n_, k_ / 64, 2},
                "per (row n, block b) the pair (beta, scale); w = scale*(q-8) + beta",
                storage().alpha.data(), n_ * k_ / 64 * 2),
        dump_of("activation_codes", "i8", {m_, k_}, "row-major [M][K], qa = round(a*127/absmax)",
                a_codes_.data(), m_ * k_),
        dump_of("activation_scale", "f32", {m_}, "[M] sa = absmax/127", act_.scale.data(), m_),
        dump_of("activation_block_sum", "i32", {m_, k_ / 64}, "[M][K/64] sum of qa per block",
                act_.block_sum.data(), m_ * k_ / 64),
        dump_of("output", "f32", {out_elems}, out_layout, out_.data(), out_elems),
    };
    if (ep_.bias) v.push_back(dump_of("bias", "f32", {n_}, "[N]", ep_.bias, n_));
    if (ep_.residual)
      v.push_back(dump_of("residual", "f32", {out_elems}, out_layout, ep_.residual, out_elems));
    return v;
  }

 private:
  // The weight layout an engine on this path would load (k3k::pack_w4b64_for): the IME2 kernels
  // read kIme2 units directly (they also accept kRowTile32 but transpose every unit in registers,
  // which is not what an engine pays), the RVV kernels kSignedRows tiles of weight_rows rows. The
  // disk cache holds the storage form, so repacking here keeps it valid.
  static k3k::W4B64Layout layout_for(k3k::KernelPath path) {
    if (path == k3k::KernelPath::kIme2) return k3k::W4B64Layout::kIme2;
    if (path == k3k::KernelPath::kRvv) return k3k::W4B64Layout::kSignedRows;
    return k3k::W4B64Layout::kRowTile32;
  }

  // weight_rows (rows per packed tile: 0 = the path's default for this VLEN), ukernel (a variant
  // of this path by contract name, or auto) and, for decode, the prefetch distance.
  void configure_microkernel(const KeyValues& p, k3k::KernelPath path, bool decode) {
    const std::int64_t rows = p.integer("weight_rows");
    weight_rows_ =
        rows == 0 ? k3k::default_weight_rows(path, n_, k_, decode ? tcm_staging_block_bytes(p) : 0)
                  : static_cast<int>(rows);
    const bool signed_rows = layout_for(path) == k3k::W4B64Layout::kSignedRows;
    if (signed_rows ? (weight_rows_ % k3k::kMinSignedRows != 0) : weight_rows_ != k3k::kW4RowTile) {
      throw UnsupportedShape(fmt::format(
          "--params: weight_rows={} is not a {} layout ({})", rows, k3k::to_string(path),
          signed_rows ? "a multiple of 16 in [16, 256]" : "32 rows per tile"));
    }
    ukernel_ = p.text("ukernel");
    if (ukernel_ != "auto") {
      const k3k::LinearVariantNames names = k3k::linear_variants(path);
      const auto& known = decode ? names.decode : names.prefill;
      if (std::find(known.begin(), known.end(), ukernel_) == known.end()) {
        throw UnsupportedShape(fmt::format(
            "--params: ukernel={} is not a {} {} microkernel (have: {})", ukernel_,
            k3k::to_string(path), decode ? "decode" : "prefill", fmt::join(known, ", ")));
      }
      tiling_.ukernel = ukernel_;
    }
    if (decode) {
      tiling_.prefetch_bytes = static_cast<int>(p.integer("prefetch"));
      if (tiling_.prefetch_bytes != 0 && !k3k::prefetch_built()) {
        throw UnsupportedShape(
            fmt::format("--params: prefetch={} needs a build with Zicbop (K3_ENABLE_ZICBOP)",
                        tiling_.prefetch_bytes));
      }
    }
  }

  // The variant the calls run (auto resolved for the packed weights).
  std::string ukernel_name() const {
    if (fp16_accumulation_) return "linear_decode-w4b64-ime2-m1n32-hp-ime2";
    if (ukernel_ != "auto") return ukernel_;
    return decode_ ? k3k::default_linear_decode(path_, weights_.front())
                   : k3k::default_linear_prefill(path_, weights_.front());
  }

  // The storage form the packed weights came from (same cache, same seed), loaded on first use.
  const k3k::W4B64Storage& storage() const {
    if (storage_.codes.empty()) storage_ = synthetic_w4b64(n_, k_, seed_);
    return storage_;
  }

  // accumulate=fp16: the IME2 `.hp` block-scale decode kernel (fp16 accumulation per block), with
  // its own, looser bound (kernels/ime2/README.md section 3.1) added in check().
  void configure_accumulation(const KeyValues& p, k3k::KernelPath path) {
    fp16_accumulation_ = p.text("accumulate") == "fp16";
    if (!fp16_accumulation_) return;
#if defined(K3_HAVE_IME2)
    if (path != k3k::KernelPath::kIme2) {
      throw UnsupportedShape(
          "--params: accumulate=fp16 is the IME2 .hp kernel: it needs --path ime2");
    }
    if (p.text("tcm") == "on")
      throw UsageError("--params: accumulate=fp16 has no TCM pipeline (use tcm=off|auto)");
#else
    (void)path;
    throw UnsupportedShape("--params: accumulate=fp16 needs the IME2 layer (not in this build)");
#endif
  }

  void run_fp16_block_scale([[maybe_unused]] const k3k::W4B64Packed& w) {
#if defined(K3_HAVE_IME2)
    try {
      k3k::linear_decode_w4b64(k3k::KernelPath::kIme2, act_, w, ep_, out_.data(), pool_, tiling_,
                               k3k::LinearDecodeOptions{k3k::Accumulation::kFp16BlockScale});
    } catch (const std::domain_error& e) {
      throw UnsupportedShape(std::string("accumulate=fp16: ") + e.what());
    }
#endif
  }

  // The extra term of the .hp bound per checked output (k3k/reference/linear.h).
  void add_fp16_accumulation_bound(const std::vector<std::int8_t>& codes,
                                   const std::vector<float>& sa,
                                   const std::vector<std::int64_t>& rows,
                                   std::vector<double>& bound) const {
    const std::vector<double> extra = k3k::reference::linear_hp_extra_bound(
        storage(), codes.data(), sa.data(), static_cast<std::int64_t>(rows.size()));
    for (std::size_t i = 0; i < extra.size(); ++i) bound[i] += extra[i];
  }

  // The TCM block the decode pipeline would stage weight tiles in (0: it will not run: tcm=off,
  // no backend, or an emulated one that auto does not take), for the default rows per tile.
  static std::int64_t tcm_staging_block_bytes(const KeyValues& p) {
    const std::string use = p.text("tcm");
    if (use == "off") return 0;
    const TcmContext& context = tcm_context(p.text("tcm_backend"));
    if (context.tcm == nullptr) return 0;
    if (use != "on" && context.tcm->backend() != k3k::tcm::Backend::kReal) return 0;
    return static_cast<std::int64_t>(context.tcm->geometry().block_bytes);
  }

  void configure_tcm(const KeyValues& p) {
    const std::string use = p.text("tcm");
    tcm_params_.use = use == "on"    ? k3k::TcmUse::kOn
                      : use == "off" ? k3k::TcmUse::kOff
                                     : k3k::TcmUse::kAuto;
    tcm_params_.slab_rows = static_cast<int>(p.integer("slab_rows"));
    if (tcm_params_.slab_rows % weight_rows_ != 0) {
      throw UsageError(fmt::format("--params: slab_rows={} is not a multiple of weight_rows ({})",
                                   tcm_params_.slab_rows, weight_rows_));
    }
    tcm_params_.compute_workers = static_cast<int>(p.integer("tcm_workers"));
    tcm_params_.pairing = p.integer("pairing") != 0;
    tcm_params_.k_min = p.integer("k_min");
    tcm_params_.b_min = p.integer("b_min_kib") * 1024;
    if (tcm_params_.use != k3k::TcmUse::kOff) {
      tcm_ = &tcm_context(p.text("tcm_backend"));
      workspace_ = tcm_workspace(*tcm_, pool_);
    }
  }

  // The gate decision and reason, the backend, and copy / compute / pair-wait seconds per call
  // (summed over workers) from the calls made so far.
  nlohmann::json tcm_json() const {
    if (!decode_) return nullptr;
    nlohmann::json j = {{"use", tcm_params_.use == k3k::TcmUse::kOn    ? "on"
                                : tcm_params_.use == k3k::TcmUse::kOff ? "off"
                                                                       : "auto"},
                        {"k_min", tcm_params_.k_min},
                        {"b_min_bytes", tcm_params_.b_min},
                        {"pairing", tcm_params_.pairing},
                        {"backend", tcm_ != nullptr && tcm_->tcm != nullptr
                                        ? k3k::tcm::to_string(tcm_->tcm->backend())
                                        : "off"},
                        {"backend_reason", tcm_ != nullptr ? tcm_->reason : "tcm=off"},
                        {"placement", pool_placement_json(pool_)}};
    if (calls_ == 0) return j;
    j["gate"] = {{"use_tcm", gate_.use_tcm},
                 {"reason", gate_.reason},
                 {"slab_rows", gate_.slab_rows},
                 {"workers", gate_.workers}};
    const double n = static_cast<double>(calls_);
    j["per_call"] = {
        {"calls", calls_},
        {"copy_seconds", totals_.copy_seconds / n},
        {"compute_seconds", totals_.compute_seconds / n},
        {"pair_wait_seconds", totals_.wait_seconds / n},
        {"bytes_copied", static_cast<double>(totals_.bytes_copied) / n},
        {"workers_without_block", static_cast<double>(totals_.workers_without_block) / n}};
    return j;
  }

  bool decode_;
  std::int64_t m_, n_, k_;
  k3k::WorkerPool& pool_;
  k3k::LinearTiling tiling_;
  int weight_rows_ = k3k::kW4RowTile;
  std::string ukernel_ = "auto";  // tiling_.ukernel views it
  k3k::LinearEpilogue ep_;
  std::uint64_t seed_ = 0;
  mutable k3k::W4B64Storage storage_;  // loaded by storage() when first needed
  std::vector<k3k::W4B64Packed> weights_;
  std::int64_t copies_ = 1;
  std::int64_t next_copy_ = 0;
  k3k::AlignedBuffer<float> a_, bias_, residual_, out_;
  k3k::PackedActivations act_;
  mutable std::vector<std::int8_t> a_codes_;
  // Decode through TCM (k3k/tcm_linear.h): parameters, backend, and what the calls reported.
  bool fp16_accumulation_ = false;
  bool throw_in_worker_ = false;  // K3BENCH_FAULT=throw-in-worker (a test hook)
  k3k::TcmDecodeParams tcm_params_;
  const TcmContext* tcm_ = nullptr;
  k3k::TcmWorkspace* workspace_ = nullptr;
  k3k::TcmGateDecision gate_;
  k3k::TcmPipelineStats totals_;
  std::int64_t calls_ = 0;
};

// The variant names of every compiled layer (decode or prefill); table_key adds "auto".
std::vector<std::string> ukernel_choices(bool decode) {
  std::vector<std::string> v;
  for (k3k::KernelPath path :
       {k3k::KernelPath::kGeneric, k3k::KernelPath::kRvv, k3k::KernelPath::kIme2}) {
    const k3k::LinearVariantNames names = k3k::linear_variants(path);
    for (const auto& n : decode ? names.decode : names.prefill) v.push_back(n);
  }
  return v;
}

std::vector<KeySpec> linear_params(bool decode) {
  const std::string_view op = decode ? "linear_decode" : "linear_prefill";
  std::vector<KeySpec> p = {workers_param(op)};
  p.push_back(table_key(
      op, "tile_n", "output columns per task (multiples of weight_rows fit the packed row tiles)",
      "64"));
  p.push_back(table_key(
      op, "ukernel",
      "microkernel variant by contract name (auto: the path's default for the weights and VLEN)",
      "auto", ukernel_choices(decode)));
  p.push_back(table_key(op, "weight_rows",
                        "rows per packed weight tile (rvv: multiple of 16 in [16, 256]; generic, "
                        "ime2: 32; 0: the path's default for this VLEN)",
                        "0"));
  p.push_back(enum_key("layout", "output layout", "rowmajor", {"rowmajor", "c4"}));
  p.push_back(int_key("bias", "add a bias vector (0/1)", "1", 0, 1));
  p.push_back(int_key("residual", "fuse a residual add (0/1)", "0", 0, 1));
  p.push_back(int_key("clamp", "clamp outputs to [-4, 4] (0/1)", "0", 0, 1));
  p.push_back(int_key("copies",
                      "weight copies rotated per call (0: auto, > 2x last-level cache for decode)",
                      "0", 0, 4096));
  return p;
}

// Decode adds the TCM pipeline's knobs (k3k/tcm_linear.h); defaults are the shipped gates.
std::vector<KeySpec> decode_params() {
  constexpr std::string_view op = "linear_decode";
  std::vector<KeySpec> p = linear_params(true);
  p.push_back(table_key(op, "prefetch",
                        "software prefetch distance in bytes ahead of the weight stream, 0 = off "
                        "(Zicbop builds only)",
                        "0"));
  p.push_back(table_key(
      op, "accumulate",
      "int32 (exact block sums), fp16 (IME2 .hp block-scale kernel, looser bound)", "int32"));
  p.push_back(table_key(op, "tcm",
                        "TCM copy/compute pipeline: auto (gated), on (skip size gates), off (DRAM)",
                        "auto"));
  p.push_back(tcm_backend_param());
  p.push_back(table_key(op, "slab_rows",
                        "weight rows per TCM slab, a multiple of weight_rows (0: auto: two fit a "
                        "block, two or more per worker)",
                        "0"));
  p.push_back(table_key(op, "tcm_workers",
                        "pipeline (compute) workers, capped by workers and usable blocks", "6"));
  p.push_back(
      table_key(op, "pairing", "pair workers: one copies while its partner computes (0/1)", "1"));
  p.push_back(table_key(op, "k_min", "gate: smallest K for the pipeline (tcm=auto)", "2048"));
  p.push_back(
      table_key(op, "b_min_kib", "gate: smallest packed weight size in KiB (tcm=auto)", "2048"));
  return p;
}

KeySpec dim(const char* name, const char* help, std::int64_t max = 1 << 20) {
  return int_key(name, help, std::nullopt, 1, max);
}

}  // namespace

void add_linear_ops(std::vector<OpInfo>& ops) {
  auto footprint = [](std::int64_t m, const KeyValues& s, const KeyValues& p) {
    const std::int64_t n = s.integer("n"), k = s.integer("k");
    const std::int64_t w = n * k / 2 + n * k / 64 * 8;
    const std::int64_t copies = std::max<std::int64_t>(1, p.integer("copies"));
    // float weights + HQQ storage during setup, packed copies, activations and outputs.
    return n * k * 4 + w * (copies + 1) + m * k * 5 + 3 * m * n * 4;
  };
  ops.push_back(
      OpInfo{"linear_prefill",
             "W4B64-asym Linear, prefill M4 kernel (quantise+pack A fused, direct epilogue)",
             {dim("m", "activation rows (tokens)"), dim("n", "output features"),
              dim("k", "input features, multiple of 64")},
             linear_params(false),
             [footprint](const KeyValues& s, const KeyValues& p) {
               return footprint(s.integer("m"), s, p);
             },
             [](const CaseInputs& in) { return std::make_unique<LinearCase>(in, false); }});
  ops.push_back(
      OpInfo{"linear_decode",
             "W4B64-asym Linear, decode M1 kernel (one token; weights streamed from DRAM)",
             {dim("n", "output features"), dim("k", "input features, multiple of 64")},
             decode_params(),
             [footprint](const KeyValues& s, const KeyValues& p) { return footprint(1, s, p); },
             [](const CaseInputs& in) { return std::make_unique<LinearCase>(in, true); }});
}

}  // namespace k3runner
