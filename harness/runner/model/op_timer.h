// Where a forward pass's time goes: steady_clock around every kernel call, summed per op kind, in
// the same run as the total it is compared with (the sum must account for the total; the rest is
// the glue between calls). Two clock reads per call (~50 ns) against calls of microseconds. Each
// call also brings the bytes it moves by source (k3k/traffic.h, the kernels' own accounting),
// summed per op kind the same way.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <utility>

#include "k3k/traffic.h"

namespace k3runner::model {

enum class Op : int {
  kEmbedding,
  kNorm,      // input, post-attention and final RMSNorm
  kQuantize,  // activation quantisation + pack (shared by the projections of one input)
  kAttnProj,  // q, k, v projections
  kQkNorm,
  kAttnSplit,  // query / gate de-interleave (output-gated attention)
  kKvAppend,   // K rotated on write
  kAttention,
  kAttnGate,  // attention * sigmoid(gate)
  kAttnOut,   // o_proj (+ residual)
  kGdnProj,   // in_proj_qkv, z, a, b
  kGdnConv,
  kGdnL2Norm,
  kGdnGates,
  kGdnCore,  // the recurrence (chunked prefill or decode step)
  kGdnNorm,  // gated RMSNorm
  kGdnOut,   // out_proj (+ residual)
  kMlpGateUp,
  kSwiglu,
  kMlpDown,  // down_proj (+ residual)
  kLmHead,
  kSample,      // argmax over the logits
  kStateReset,  // recurrent and convolution states zeroed / restored, caches rewound
  kCount
};

const char* op_name(Op op);

class TraceRecorder;
// Hands one timed call to a trace (trace_recorder.cpp), steady_clock nanoseconds.
void trace_op(TraceRecorder& trace, Op op, int layer, std::int64_t begin_ns, std::int64_t end_ns);
// Test hook: `spins` steps of a dependent integer chain (forward.cpp).
void planted_work(std::uint64_t spins);
class CountMarks;
// Marks a kernel call's start (enter) or end for an instruction counter (count_marks.cpp).
void count_mark_op(CountMarks& marks, Op op, bool enter);
// Marks where the timer's own work around a call begins (begin) and ends, for the counter to
// leave out.
void count_mark_timer(CountMarks& marks, bool begin);

class OpTimer {
 public:
  using Clock = std::chrono::steady_clock;
  template <typename Fn>
  void time(Op op, const k3k::Traffic& bytes, Fn&& fn) {
    timed(op, &bytes, std::forward<Fn>(fn));
  }
  template <typename Fn>
  void time(Op op, Fn&& fn) {
    timed(op, nullptr, std::forward<Fn>(fn));
  }
  // The layer the next calls belong to (-1: embedding, final norm, lm_head, sampling).
  void set_layer(int layer) { layer_ = layer; }
  // Every call is also handed to `trace` (null: none); add() and clear() leave it.
  void set_trace(TraceRecorder* trace) { trace_ = trace; }
  TraceRecorder* trace() const { return trace_; }
  // Test hook (K3BENCH_PLANT_OP_WORK=<op>:<spins>, read by the forward): extra work inside every
  // call of one op kind, timed with it, so that a model A/B can be shown to attribute a planted
  // slowdown to the op it was planted in.
  void plant(Op op, std::uint64_t spins) {
    planted_op_ = op;
    planted_spins_ = spins;
  }
  // Every call is also marked for an instruction counter (null: none).
  void set_count_marks(CountMarks* marks) { marks_ = marks; }
  CountMarks* count_marks() const { return marks_; }
  static std::int64_t nanos(Clock::time_point t) {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
  }
  void add(const OpTimer& other) {
    for (std::size_t i = 0; i < seconds_.size(); ++i) {
      seconds_[i] += other.seconds_[i];
      calls_[i] += other.calls_[i];
      bytes_[i] += other.bytes_[i];
    }
  }
  void clear() {
    seconds_.fill(0.0);
    calls_.fill(0);
    bytes_.fill({});
  }
  double seconds(Op op) const { return seconds_[static_cast<int>(op)]; }
  const k3k::Traffic& bytes(Op op) const { return bytes_[static_cast<int>(op)]; }
  k3k::Traffic total_bytes() const {
    k3k::Traffic t;
    for (const auto& b : bytes_) t += b;
    return t;
  }
  std::int64_t calls(Op op) const { return calls_[static_cast<int>(op)]; }
  double total() const {
    double s = 0;
    for (double x : seconds_) s += x;
    return s;
  }

 private:
  // The timer's own work (clock reads, sums, the trace) is marked as such: an engine does not run
  // it, and the glue region is to hold the forward's own code between calls.
  template <typename Fn>
  void timed(Op op, const k3k::Traffic* bytes, Fn&& fn) {
    if (marks_ != nullptr) count_mark_timer(*marks_, true);
    if (bytes != nullptr) bytes_[static_cast<int>(op)] += *bytes;
    const auto t0 = Clock::now();
    if (marks_ != nullptr) count_mark_op(*marks_, op, true);
    fn();
    if (op == planted_op_) planted_work(planted_spins_);
    if (marks_ != nullptr) count_mark_op(*marks_, op, false);
    const auto t1 = Clock::now();
    seconds_[static_cast<int>(op)] += std::chrono::duration<double>(t1 - t0).count();
    ++calls_[static_cast<int>(op)];
    if (trace_ != nullptr) trace_op(*trace_, op, layer_, nanos(t0), nanos(t1));
    if (marks_ != nullptr) count_mark_timer(*marks_, false);
  }

  std::array<double, static_cast<int>(Op::kCount)> seconds_{};
  std::array<std::int64_t, static_cast<int>(Op::kCount)> calls_{};
  std::array<k3k::Traffic, static_cast<int>(Op::kCount)> bytes_{};
  int layer_ = -1;
  TraceRecorder* trace_ = nullptr;
  CountMarks* marks_ = nullptr;
  Op planted_op_ = Op::kCount;  // none
  std::uint64_t planted_spins_ = 0;
};

}  // namespace k3runner::model
