// The two passes an RVV decode chunk shares between its exact path (attention_decode_rvv.cpp) and
// its scaled-halves path (attention_decode_scaled_rvv.cpp), so that the two stay bitwise the same
// where they must:
//   * softmax numerators: each query head's scores become exp(s - m) in place, with the chunk's
//     max m and sum l stored per head (then `after_row` may rescale the row);
//   * value pass: per e32m4 strip of head_dim, a pair of query heads accumulates sum_j p_j v_j in
//     two register groups; `accumulate` adds a run of the chunk's V rows to them (one V load
//     serving both heads), and the pass stores the two accumulators.
#pragma once

#include <riscv_vector.h>

#include <cstdint>

#include "common/kv_runs.h"
#include "rvv/rvv_math.h"
#include "ukernels/attention.h"

namespace k3k::rvv_detail {

template <class AfterRow>
inline void chunk_softmax_numerators(const ukernel::DecodeChunk& c, AfterRow&& after_row) {
  for (int gi = 0; gi < c.group; ++gi) {
    float* sg = c.scores + static_cast<std::int64_t>(gi) * c.score_stride;
    const float m = max_of(sg, c.n);
    const float l = exp_shift_sum(sg, c.n, m);
    c.m[gi * c.head_stride] = m;
    c.l[gi * c.head_stride] = l;
    after_row(sg);
  }
}

inline void chunk_softmax_numerators(const ukernel::DecodeChunk& c) {
  chunk_softmax_numerators(c, [](float*) {});
}

// One run of consecutive cache slots in the value pass: positions [j0, j0 + run) of the chunk at
// slot `slot` onwards, for strip [d, d + vl) of head_dim, and the pair of query heads' numerators
// (p1 == p0 for the last head of an odd group).
struct ValueRun {
  bool pair;
  const float* p0;
  const float* p1;
  int d;
  std::size_t vl;
  std::int64_t j0, slot, run;
};

// accumulate(const ValueRun& r, acc0, acc1): adds p0[j] * V[j][d, d + vl) to acc0 (and p1[j] times
// the same to acc1 when r.pair) over the run's positions j.
template <class Accumulate>
inline void chunk_value_pass(const ukernel::DecodeChunk& c, Accumulate&& accumulate) {
  const int hd = c.cache->head_dim();
  for (int gi = 0; gi < c.group; gi += 2) {
    const bool pair = gi + 1 < c.group;
    const float* p0 = c.scores + static_cast<std::int64_t>(gi) * c.score_stride;
    const float* p1 = pair ? p0 + c.score_stride : p0;
    float* a0 = c.acc + gi * c.head_stride * hd;
    float* a1 = pair ? a0 + c.head_stride * hd : a0;
    for (int d = 0; d < hd;) {
      const std::size_t vl = __riscv_vsetvl_e32m4(static_cast<std::size_t>(hd - d));
      vfloat32m4_t acc0 = __riscv_vfmv_v_f_f32m4(0.0f, vl), acc1 = acc0;
      k3k::detail::for_each_slot_run(
          *c.cache, c.first_pos, c.n, [&](std::int64_t j0, std::int64_t slot, std::int64_t run) {
            accumulate(ValueRun{pair, p0, p1, d, vl, j0, slot, run}, acc0, acc1);
          });
      __riscv_vse32_v_f32m4(a0 + d, acc0, vl);
      if (pair) __riscv_vse32_v_f32m4(a1 + d, acc1, vl);
      d += static_cast<int>(vl);
    }
  }
}

}  // namespace k3k::rvv_detail
