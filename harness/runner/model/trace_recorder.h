// k3bench --model --trace FILE: a Chrome trace-event file (the JSON object form with
// "traceEvents", which chrome://tracing and ui.perfetto.dev open) of the model run. One process
// per test (pp512, tg128, ...); in it the caller's track holds a slice per kernel call named by op
// kind with its layer, and one track per worker holds that worker's share of every parallel region
// inside those calls (start, stop, tasks run), so idle workers and uneven splits show; inside
// them, the stages of the TCM decode pipeline (copy a slab into TCM, compute a slab, wait for the
// pair partner), with the slab and the pair (lane) they belong to. A counter track follows the
// context length.
//
// Sampling rule (so the file stays small enough to open): only the first measured repetition of
// each test is recorded (warm-up runs and later repetitions are not), and at most `max_events`
// events in all; past the cap events are counted, not kept, and the count is in the file
// ("otherData": "dropped_events"). Workers write only their own buffers, so recording takes no
// lock: the caller's events and a test's boundaries happen between parallel regions.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/runner/model/op_timer.h"
#include "k3k/worker_pool.h"

namespace k3runner::model {

class TraceRecorder final : public k3k::WorkerPoolObserver {
 public:
  TraceRecorder(int workers, std::int64_t max_events);

  // A new test (its own process in the trace); recording is off until record(true).
  void begin_test(const std::string& name);
  void record(bool on) { on_ = on; }
  bool recording() const { return on_; }

  // A kernel call on the caller's thread (steady_clock nanoseconds); layer -1: outside the layers.
  void op(Op op, int layer, std::int64_t begin_ns, std::int64_t end_ns);
  // The tokens in the caches after a forward call.
  void context(std::int64_t tokens, std::int64_t at_ns);
  void region(int worker, std::int64_t begin_ns, std::int64_t end_ns, std::int64_t tasks) override;
  void stage(int worker, const char* what, std::int64_t item, int lane, std::int64_t begin_ns,
             std::int64_t end_ns) override;

  nlohmann::json json() const;
  // Writes json() to `path`; throws std::runtime_error naming the file when it cannot.
  void write(const std::string& path) const;
  std::int64_t kept() const;
  std::int64_t dropped() const { return dropped_.load(); }

 private:
  struct Event {
    char kind;  // 'X' slice, 'C' counter, 'S' a pipeline stage (layer holds its lane)
    int test, track, layer;
    Op op;
    std::int64_t begin_ns, end_ns, value;
    const char* stage = nullptr;  // 'S': the stage's static name
  };
  bool take();  // room for one more event (else counted as dropped)

  std::int64_t max_events_;
  std::int64_t origin_ns_ = -1;  // the first event's time: the trace starts at 0
  bool on_ = false;
  int test_ = -1;
  std::vector<std::string> tests_;
  std::vector<std::vector<Event>> tracks_;  // [0]: the caller's ops and counters; [1 + w]: worker w
  std::atomic<std::int64_t> events_{0}, dropped_{0};
};

}  // namespace k3runner::model
