#include "harness/runner/model/trace_recorder.h"

#include <chrono>
#include <fstream>
#include <stdexcept>

namespace k3runner::model {

namespace {

// Trace-event times are microseconds.
double micros(std::int64_t ns) {
  return static_cast<double>(ns) / 1000.0;
}

}  // namespace

void trace_op(TraceRecorder& trace, Op op, int layer, std::int64_t begin_ns, std::int64_t end_ns) {
  trace.op(op, layer, begin_ns, end_ns);
}

TraceRecorder::TraceRecorder(int workers, std::int64_t max_events)
    : max_events_(max_events),
      origin_ns_(std::chrono::duration_cast<std::chrono::nanoseconds>(
                     std::chrono::steady_clock::now().time_since_epoch())
                     .count()),
      tracks_(static_cast<std::size_t>(workers) + 1) {}

void TraceRecorder::begin_test(const std::string& name) {
  tests_.push_back(name);
  test_ = static_cast<int>(tests_.size()) - 1;
  on_ = false;
}

bool TraceRecorder::take() {
  if (events_.fetch_add(1, std::memory_order_relaxed) < max_events_) return true;
  dropped_.fetch_add(1, std::memory_order_relaxed);
  return false;
}

void TraceRecorder::op(Op op, int layer, std::int64_t begin_ns, std::int64_t end_ns) {
  if (!on_ || !take()) return;
  tracks_[0].push_back({'X', test_, 0, layer, op, begin_ns, end_ns, 0});
}

void TraceRecorder::context(std::int64_t tokens, std::int64_t at_ns) {
  if (!on_ || !take()) return;
  tracks_[0].push_back({'C', test_, 0, -1, Op::kCount, at_ns, at_ns, tokens});
}

void TraceRecorder::region(int worker, std::int64_t begin_ns, std::int64_t end_ns,
                           std::int64_t tasks) {
  if (!on_ || static_cast<std::size_t>(worker) + 1 >= tracks_.size() || !take()) return;
  tracks_[static_cast<std::size_t>(worker) + 1].push_back(
      {'X', test_, worker + 1, -1, Op::kCount, begin_ns, end_ns, tasks});
}

void TraceRecorder::stage(int worker, const char* what, std::int64_t item, int lane,
                          std::int64_t begin_ns, std::int64_t end_ns) {
  if (!on_ || static_cast<std::size_t>(worker) + 1 >= tracks_.size() || !take()) return;
  tracks_[static_cast<std::size_t>(worker) + 1].push_back(
      {'S', test_, worker + 1, lane, Op::kCount, begin_ns, end_ns, item, what});
}

std::int64_t TraceRecorder::kept() const {
  std::int64_t n = 0;
  for (const auto& t : tracks_) n += static_cast<std::int64_t>(t.size());
  return n;
}

nlohmann::json TraceRecorder::json() const {
  nlohmann::json events = nlohmann::json::array();
  // Names of the processes (tests) and threads (the caller, the workers), then the events.
  for (std::size_t t = 0; t < tests_.size(); ++t) {
    const int pid = static_cast<int>(t) + 1;
    events.push_back({{"ph", "M"},
                      {"name", "process_name"},
                      {"pid", pid},
                      {"tid", 0},
                      {"args", {{"name", tests_[t]}}}});
    events.push_back({{"ph", "M"},
                      {"name", "process_sort_index"},
                      {"pid", pid},
                      {"tid", 0},
                      {"args", {{"sort_index", pid}}}});
    for (std::size_t track = 0; track < tracks_.size(); ++track) {
      const std::string name = track == 0 ? "kernel calls" : "worker " + std::to_string(track - 1);
      events.push_back({{"ph", "M"},
                        {"name", "thread_name"},
                        {"pid", pid},
                        {"tid", static_cast<int>(track)},
                        {"args", {{"name", name}}}});
    }
  }
  for (const auto& track : tracks_) {
    for (const Event& e : track) {
      const double ts = micros(e.begin_ns - origin_ns_);
      if (e.kind == 'C') {
        events.push_back({{"ph", "C"},
                          {"name", "context tokens"},
                          {"pid", e.test + 1},
                          {"tid", 0},
                          {"ts", ts},
                          {"args", {{"tokens", e.value}}}});
      } else if (e.track == 0) {
        nlohmann::json args = nlohmann::json::object();
        if (e.layer >= 0) args["layer"] = e.layer;
        events.push_back({{"ph", "X"},
                          {"name", op_name(e.op)},
                          {"cat", "kernel"},
                          {"pid", e.test + 1},
                          {"tid", 0},
                          {"ts", ts},
                          {"dur", micros(e.end_ns - e.begin_ns)},
                          {"args", args}});
      } else if (e.kind == 'S') {
        events.push_back({{"ph", "X"},
                          {"name", e.stage},
                          {"cat", "tcm"},
                          {"pid", e.test + 1},
                          {"tid", e.track},
                          {"ts", ts},
                          {"dur", micros(e.end_ns - e.begin_ns)},
                          {"args",
                           {{std::string(e.stage) == "pair_wait" ? "phase" : "slab", e.value},
                            {"lane", e.layer}}}});
      } else {
        events.push_back({{"ph", "X"},
                          {"name", "tasks"},
                          {"cat", "worker"},
                          {"pid", e.test + 1},
                          {"tid", e.track},
                          {"ts", ts},
                          {"dur", micros(e.end_ns - e.begin_ns)},
                          {"args", {{"tasks", e.value}}}});
      }
    }
  }
  return {{"traceEvents", events},
          {"displayTimeUnit", "ms"},
          {"otherData",
           {{"producer", "k3bench --model --trace"},
            {"sampling", "the first measured repetition of each test"},
            {"max_events", max_events_},
            {"dropped_events", dropped()}}}};
}

void TraceRecorder::write(const std::string& path) const {
  std::ofstream out(path);
  if (!out) throw std::runtime_error("--trace " + path + ": cannot write the file");
  out << json().dump() << "\n";
  if (!out) throw std::runtime_error("--trace " + path + ": write failed");
}

}  // namespace k3runner::model
