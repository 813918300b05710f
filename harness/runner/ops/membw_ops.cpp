// membw: the machine's own streaming bandwidth (read, copy, triad), measured by the same binary
// and worker pool as the kernels, so kernel GB/s can be stated as a fraction of it.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "k3k/rounding.h"
#include "harness/runner/ops/op_lists.h"
#include "harness/runner/ops/op_support.h"

namespace k3runner {
namespace {

using Type = KeySpec::Type;
constexpr std::int64_t kChunkFloats = 1 << 16;  // 256 KiB per task

class MembwCase final : public OpCase {
 public:
  explicit MembwCase(const CaseInputs& in)
      : mode_(in.params.text("mode")),
        count_(in.shape.integer("mib") * (1 << 20) / 4),
        pool_(pool_of_size(static_cast<int>(in.params.integer("workers")))) {
    a_ = make_normal(count_, 1.0, in.seed);
    if (mode_ != "read") b_ = k3k::AlignedBuffer<float>(static_cast<std::size_t>(count_));
    if (mode_ == "triad") c_ = make_normal(count_, 1.0, in.seed + 1);
    partial_ = k3k::AlignedBuffer<double>(static_cast<std::size_t>(chunks()));
  }

  std::int64_t chunks() const { return (count_ + kChunkFloats - 1) / kChunkFloats; }

  void run_once() override {
    pool_.parallel_for(chunks(), [&](std::int64_t chunk, int) {
      const std::int64_t i0 = chunk * kChunkFloats, i1 = std::min(count_, i0 + kChunkFloats);
      if (mode_ == "read") {
        // Eight independent accumulators so the loop is bound by loads, not by the add latency.
        float acc[8] = {};
        std::int64_t i = i0;
        for (; i + 8 <= i1; i += 8)
          for (int l = 0; l < 8; ++l) acc[l] += a_[i + l];
        double s = 0.0;
        for (; i < i1; ++i) s += a_[i];
        for (float x : acc) s += x;
        partial_[chunk] = s;
      } else if (mode_ == "copy") {
        std::memcpy(b_.data() + i0, a_.data() + i0, static_cast<std::size_t>(i1 - i0) * 4);
      } else {
        for (std::int64_t i = i0; i < i1; ++i) b_[i] = a_[i] + 3.0f * c_[i];
      }
    });
  }

  Traffic traffic() const override {
    const std::int64_t streams = mode_ == "read" ? 1 : mode_ == "copy" ? 2 : 3;
    return {0, streams * count_ * 4,
            mode_ == "read"    ? count_
            : mode_ == "triad" ? 2 * count_
                               : 0,
            std::nullopt};
  }

  // read: each chunk's float sum vs float64 (8 lanes of ~n/8 sequential adds: gamma_{n/8+8} bound);
  // copy: bit-exact; triad: one fused or two separate roundings, gamma_2 bound.
  Accuracy check(bool) override {
    run_once();
    Accuracy acc;
    acc.total = acc.checked = mode_ == "read" ? chunks() : count_;
    acc.reference = "float64 of the same stream";
    for (std::int64_t chunk = 0; chunk < chunks() && mode_ == "read"; ++chunk) {
      const std::int64_t i0 = chunk * kChunkFloats, i1 = std::min(count_, i0 + kChunkFloats);
      double exact = 0.0, mag = 0.0;
      for (std::int64_t i = i0; i < i1; ++i) {
        exact += a_[i];
        mag += std::fabs(a_[i]);
      }
      record(acc, partial_[chunk], exact, k3k::gamma_f32((i1 - i0) / 8.0 + 8) * mag);
    }
    for (std::int64_t i = 0; i < count_ && mode_ != "read"; ++i) {
      const double exact = mode_ == "copy" ? a_[i] : double(a_[i]) + 3.0 * double(c_[i]);
      const double bound = mode_ == "copy" ? 0.0 : k3k::gamma_f32(2) * (std::fabs(a_[i]) + 3.0 * std::fabs(c_[i]));
      record(acc, b_[i], exact, bound);
    }
    return acc;
  }

  nlohmann::json params_used() const override {
    return {{"workers", pool_.size()}, {"mode", mode_}, {"chunk_bytes", kChunkFloats * 4}};
  }
  std::string path() const override { return "none"; }  // a probe, not a kernel
  std::vector<DumpArray> dump_arrays() const override { return {}; }

 private:
  static void record(Accuracy& acc, double got, double exact, double bound) {
    const double err = std::fabs(got - exact);
    acc.max_abs_err = std::max(acc.max_abs_err, err);
    acc.max_rel_err = std::max(acc.max_rel_err, err / std::max(std::fabs(exact), 1e-30));
    const double ratio = bound > 0 ? err / bound : (err > 0 ? INFINITY : 0.0);
    if (ratio > acc.worst_ratio) {
      acc.worst_ratio = ratio;
      acc.worst_bound = bound;
    }
    acc.pass = acc.worst_ratio <= 1.0;
  }

  std::string mode_;
  std::int64_t count_;
  k3k::WorkerPool& pool_;
  k3k::AlignedBuffer<float> a_, b_, c_;
  k3k::AlignedBuffer<double> partial_;
};

}  // namespace

void add_membw_ops(std::vector<OpInfo>& ops) {
  ops.push_back(OpInfo{
      "membw",
      "streaming memory bandwidth probe: read (sum), copy (memcpy), triad (a = b + s*c)",
      {int_key("mib", "array size in MiB (make it several times the last-level cache)", "256", 1, 1 << 16)},
      {workers_param(), enum_key("mode", "access pattern", "read", {"read", "copy", "triad"})},
      [](const KeyValues& s, const KeyValues&) { return 3 * s.integer("mib") * (1ll << 20); },
      [](const CaseInputs& in) { return std::make_unique<MembwCase>(in); }});
}

}  // namespace k3runner
