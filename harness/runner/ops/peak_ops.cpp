// peak: the compute ceiling of this binary on this CPU, for the roofline of the reports. Every
// worker runs eight independent multiply-add chains on register-resident data at the same time,
// written the way the selected kernel layer is compiled:
//   rvv (and ime2, whose non-matrix code is RVV): RVV 1.0 intrinsics at LMUL 2, vsetvlmax lanes;
//   generic: GCC vector types of the widest width the compile flags give on x86 (SSE2 by default,
//            AVX-512 with K3_HOST_MARCH=native), scalar on riscv64 (its generic layer is scalar).
// mode=f32: acc = acc * x + y in float32 (two operations per lane and step; one FMA where the
// compiler contracts it). mode=i16: the same on uint16 lanes, wrapping -- the width int8 products
// widen into in the Linear kernels. The recurrence is not affine, so no compiler can replace the
// loop by a closed form, and its result is checked: exactly for i16, within a derived bound for
// f32. IME2's matrix peak is not measured here; the board files carry its published figure.
#include <algorithm>
#include <cmath>
#include <cstring>

#if defined(K3_HAVE_RVV)
#include <riscv_vector.h>
#endif

#include "k3k/seeded_random.h"
#include "harness/runner/ops/op_lists.h"
#include "harness/runner/ops/op_support.h"

namespace k3runner {
namespace {

constexpr int kChains = 8;  // independent accumulators: enough to cover FMA latency x pipes
constexpr float kF32Multiplier = 0.75f;  // contracting: the chains settle near y / (1 - x)
constexpr std::uint16_t kI16Multiplier = 3;

#if defined(__x86_64__) || defined(__i386__)
constexpr int kGenericVectorBytes = __BIGGEST_ALIGNMENT__;  // 16 SSE2, 32 AVX, 64 AVX-512
#else
constexpr int kGenericVectorBytes = 0;  // scalar
#endif

template <typename T, int Bytes>
struct VectorOf {
  typedef T type __attribute__((vector_size(Bytes)));
};
template <typename T>
struct VectorOf<T, 0> {
  using type = T;
};

template <typename T>
constexpr int generic_lanes() {
  return kGenericVectorBytes == 0 ? 1 : kGenericVectorBytes / static_cast<int>(sizeof(T));
}

// Eight chains of `lanes` values each, in state[chain * lanes + lane]; y is one vector of lanes.
template <typename T>
void chains_generic(T* state, T x, const T* y, std::int64_t steps) {
  using V = typename VectorOf<T, kGenericVectorBytes>::type;
  V a[kChains], yv;
  std::memcpy(&yv, y, sizeof(V));
  for (int c = 0; c < kChains; ++c) std::memcpy(&a[c], state + c * generic_lanes<T>(), sizeof(V));
  V a0 = a[0], a1 = a[1], a2 = a[2], a3 = a[3], a4 = a[4], a5 = a[5], a6 = a[6], a7 = a[7];
  for (std::int64_t i = 0; i < steps; ++i) {
    a0 = a0 * x + yv;
    a1 = a1 * x + yv;
    a2 = a2 * x + yv;
    a3 = a3 * x + yv;
    a4 = a4 * x + yv;
    a5 = a5 * x + yv;
    a6 = a6 * x + yv;
    a7 = a7 * x + yv;
  }
  a[0] = a0, a[1] = a1, a[2] = a2, a[3] = a3, a[4] = a4, a[5] = a5, a[6] = a6, a[7] = a7;
  for (int c = 0; c < kChains; ++c) std::memcpy(state + c * generic_lanes<T>(), &a[c], sizeof(V));
}

#if defined(K3_HAVE_RVV)
// RVV types cannot be array elements: the eight chains are spelled out.
#define K3_PEAK_RVV_CHAINS(load, store, madd, suffix)                                          \
  const std::size_t vl = __riscv_vsetvlmax_##suffix();                                         \
  auto yv = load(y, vl);                                                                       \
  auto a0 = load(state + 0 * vl, vl), a1 = load(state + 1 * vl, vl);                           \
  auto a2 = load(state + 2 * vl, vl), a3 = load(state + 3 * vl, vl);                           \
  auto a4 = load(state + 4 * vl, vl), a5 = load(state + 5 * vl, vl);                           \
  auto a6 = load(state + 6 * vl, vl), a7 = load(state + 7 * vl, vl);                           \
  for (std::int64_t i = 0; i < steps; ++i) {                                                   \
    a0 = madd(a0, x, yv, vl), a1 = madd(a1, x, yv, vl), a2 = madd(a2, x, yv, vl);              \
    a3 = madd(a3, x, yv, vl), a4 = madd(a4, x, yv, vl), a5 = madd(a5, x, yv, vl);              \
    a6 = madd(a6, x, yv, vl), a7 = madd(a7, x, yv, vl);                                        \
  }                                                                                            \
  store(state + 0 * vl, a0, vl), store(state + 1 * vl, a1, vl), store(state + 2 * vl, a2, vl); \
  store(state + 3 * vl, a3, vl), store(state + 4 * vl, a4, vl), store(state + 5 * vl, a5, vl); \
  store(state + 6 * vl, a6, vl), store(state + 7 * vl, a7, vl)

void chains_rvv(float* state, float x, const float* y, std::int64_t steps) {
  K3_PEAK_RVV_CHAINS(__riscv_vle32_v_f32m2, __riscv_vse32_v_f32m2, __riscv_vfmadd_vf_f32m2, e32m2);
}
void chains_rvv(std::uint16_t* state, std::uint16_t x, const std::uint16_t* y, std::int64_t steps) {
  K3_PEAK_RVV_CHAINS(__riscv_vle16_v_u16m2, __riscv_vse16_v_u16m2, __riscv_vmadd_vx_u16m2, e16m2);
}
#undef K3_PEAK_RVV_CHAINS
#endif

template <typename T>
class PeakCase final : public OpCase {
 public:
  PeakCase(const CaseInputs& in, T multiplier)
      : steps_(in.shape.integer("kiters") * 1024),
        x_(multiplier),
        pool_(pool_of_size(static_cast<int>(in.params.integer("workers")))) {
#if defined(K3_HAVE_RVV)
    vector_ = in.path != k3k::KernelPath::kGeneric;
    if (vector_)
      lanes_ =
          static_cast<int>(sizeof(T) == 4 ? __riscv_vsetvlmax_e32m2() : __riscv_vsetvlmax_e16m2());
#endif
    if (!vector_) lanes_ = generic_lanes<T>();
    const std::size_t per_worker = static_cast<std::size_t>(kChains * lanes_);
    initial_ = k3k::AlignedBuffer<T>(per_worker * static_cast<std::size_t>(pool_.size()));
    state_ = k3k::AlignedBuffer<T>(initial_.size());
    y_ = k3k::AlignedBuffer<T>(static_cast<std::size_t>(lanes_));
    k3k::SeededRandom rng(in.seed);
    for (auto& v : initial_) v = draw(rng, 0.0, 1.0);
    for (auto& v : y_) v = draw(rng, 0.5, 1.0);
  }

  void run_once() override {
    std::memcpy(state_.data(), initial_.data(), initial_.size() * sizeof(T));
    pool_.run_each(pool_.size(), [&](int worker) {
      T* s = state_.data() + static_cast<std::size_t>(worker) * kChains * lanes_;
#if defined(K3_HAVE_RVV)
      if (vector_) return chains_rvv(s, x_, y_.data(), steps_);
#endif
      chains_generic(s, x_, y_.data(), steps_);
    });
  }

  Traffic traffic() const override {
    return {0, 0, 2 * steps_ * kChains * lanes_ * pool_.size(), std::nullopt};
  }

  // Every lane of every chain against the same recurrence in float64 (f32) or exact integers
  // (i16). f32 bound: each step rounds at most twice, |error| <= u (|x acc| + |x acc + y|); the
  // recurrence contracts by |x| per step, so the accumulated error stays below
  // u (|x| M + M) / (1 - |x|) with M the largest magnitude the chain reaches; twice that here.
  Accuracy check(bool) override {
    run_once();
    Accuracy acc;
    acc.reference = sizeof(T) == 4 ? "float64 recurrence" : "exact integer recurrence (mod 2^16)";
    acc.total = acc.checked = static_cast<std::int64_t>(state_.size());
    for (std::size_t i = 0; i < state_.size(); ++i) {
      const T y = y_[i % static_cast<std::size_t>(lanes_)];
      double exact = 0, bound = 0;
      if constexpr (sizeof(T) == 4) {
        double e = initial_[i], m = std::fabs(e);
        for (std::int64_t s = 0; s < steps_; ++s) {
          e = e * x_ + y;
          m = std::max(m, std::fabs(e));
        }
        exact = e;
        const double u = std::ldexp(1.0, -24);
        bound = 2 * u * (std::fabs(x_) * m + m) / (1 - std::fabs(x_));
      } else {
        std::uint32_t e = initial_[i];
        for (std::int64_t s = 0; s < steps_; ++s) e = (e * x_ + y) & 0xFFFFu;
        exact = e;
      }
      const double err = std::fabs(double(state_[i]) - exact);
      acc.max_abs_err = std::max(acc.max_abs_err, err);
      acc.max_rel_err = std::max(acc.max_rel_err, err / std::max(std::fabs(exact), 1e-30));
      const double ratio = bound > 0 ? err / bound : (err > 0 ? INFINITY : 0.0);
      if (ratio >= acc.worst_ratio) {
        acc.worst_ratio = ratio;
        acc.worst_bound = bound;
      }
    }
    acc.pass = acc.worst_ratio <= 1.0;
    return acc;
  }

  nlohmann::json params_used() const override {
    return {{"workers", pool_.size()},
            {"mode", sizeof(T) == 4 ? "f32" : "i16"},
            {"chains", kChains},
            {"lanes", lanes_},
            {"code", vector_ ? "rvv intrinsics, LMUL 2"
                     : kGenericVectorBytes > 0
                         ? "gcc vector types, " + std::to_string(kGenericVectorBytes) + " bytes"
                         : "scalar"}};
  }
  std::string path() const override {
    return vector_ ? "rvv" : "generic";
  }
  std::vector<DumpArray> dump_arrays() const override {
    const auto n = static_cast<std::int64_t>(state_.size());
    return {dump_of("output", sizeof(T) == 4 ? "f32" : "u16", {pool_.size(), kChains, lanes_},
                    "[worker][chain][lane]", state_.data(), n)};
  }

 private:
  static T draw(k3k::SeededRandom& rng, double lo, double hi) {
    if constexpr (sizeof(T) == 4) {
      return static_cast<T>(lo + (hi - lo) * rng.uniform());
    } else {
      return static_cast<T>(rng.next() & 0xFFFFu);
    }
  }

  std::int64_t steps_;
  T x_;
  k3k::WorkerPool& pool_;
  bool vector_ = false;
  int lanes_ = 1;
  k3k::AlignedBuffer<T> initial_, state_, y_;
};

}  // namespace

void add_peak_ops(std::vector<OpInfo>& ops) {
  ops.push_back(OpInfo{
      "peak",
      "compute-peak probe: independent multiply-add chains on every worker (f32, or uint16 lanes)",
      {int_key("kiters", "chain steps per call, in thousands (1024 steps)", "16", 1, 1 << 20)},
      {workers_param(), enum_key("mode", "element type of the chains", "f32", {"f32", "i16"})},
      [](const KeyValues&, const KeyValues&) { return std::int64_t{1} << 20; },
      [](const CaseInputs& in) -> std::unique_ptr<OpCase> {
        if (in.params.text("mode") == "f32")
          return std::make_unique<PeakCase<float>>(in, kF32Multiplier);
        return std::make_unique<PeakCase<std::uint16_t>>(in, kI16Multiplier);
      }});
}

}  // namespace k3runner
