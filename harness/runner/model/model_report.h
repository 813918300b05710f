// What a whole-model run reports besides its times: the per-op breakdown (from the same timed
// calls, with its sum checked against their wall time) and a checksum of the logits, which two
// builds must share when they compute identical outputs.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include <nlohmann/json.hpp>

#include "harness/runner/model/op_timer.h"

namespace k3runner::model {

// The per-op share of `wall_s` (the timed calls' wall time, `calls` of them): ops in descending
// time, each with seconds per call, calls per call, share and the bytes it moved per call by source
// (k3k/traffic.h); the ops' sum against the wall time ("sum_check": ok when the unattributed rest
// -- the glue between kernel calls -- is within 2% of the wall time or within 1 us per kernel
// call; never when the ops exceed the wall time) and the bytes of all ops per call.
nlohmann::json breakdown_json(const OpTimer& timer, double wall_s, std::int64_t calls);

// {"weights", "metadata", "kv_read", "kv_write", "state", "activations", "streamed", "total"}:
// bytes, each divided by `per` (calls or tokens).
nlohmann::json traffic_json(const k3k::Traffic& t, double per = 1.0);

// FNV-1a 64 over the logits' bytes, chained over calls.
class LogitsChecksum {
 public:
  void add(std::span<const float> logits);
  std::string hex() const;

 private:
  std::uint64_t h_ = 0xcbf29ce484222325ull;
};

}  // namespace k3runner::model
