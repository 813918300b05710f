#include "harness/runner/model/model_report.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include <fmt/format.h>

namespace k3runner::model {

nlohmann::json traffic_json(const k3k::Traffic& t, double per) {
  const auto d = [per](std::int64_t bytes) { return static_cast<double>(bytes) / per; };
  return {{"weights", d(t.weights)},     {"metadata", d(t.metadata)},
          {"kv_read", d(t.kv_read)},     {"kv_write", d(t.kv_write)},
          {"state", d(t.state)},         {"activations", d(t.activations)},
          {"streamed", d(t.streamed())}, {"total", d(t.total())}};
}

nlohmann::json breakdown_json(const OpTimer& timer, double wall_s, std::int64_t calls) {
  std::vector<Op> ops;
  for (int i = 0; i < static_cast<int>(Op::kCount); ++i)
    if (timer.calls(static_cast<Op>(i)) > 0) ops.push_back(static_cast<Op>(i));
  std::sort(ops.begin(), ops.end(),
            [&](Op a, Op b) { return timer.seconds(a) > timer.seconds(b); });
  const double n = static_cast<double>(std::max<std::int64_t>(calls, 1));
  nlohmann::json rows = nlohmann::json::array();
  k3k::Traffic bytes;
  for (const Op op : ops) {
    rows.push_back({{"op", op_name(op)},
                    {"seconds_per_call", timer.seconds(op) / n},
                    {"kernel_calls_per_call", static_cast<double>(timer.calls(op)) / n},
                    {"share", wall_s > 0 ? timer.seconds(op) / wall_s : 0.0},
                    {"bytes_per_call", traffic_json(timer.bytes(op), n)}});
    bytes += timer.bytes(op);
  }
  const double sum = timer.total();
  double kernel_calls = 0;
  for (const Op op : ops) kernel_calls += static_cast<double>(timer.calls(op));
  const double rest_s = wall_s - sum;
  const double rest = wall_s > 0 ? rest_s / wall_s : 0.0;
  // The rest is the glue between kernel calls: two clock reads (27 ns each on the development
  // host), the tiling and activation-pack lookups, the loop over layers -- measured 0.2 us per
  // kernel call there, which is 5-8% of a tiny test model's microsecond calls and nothing beside
  // a real model's. So the sum is ok when the rest is within 2% of the wall time or within
  // kGluePerCall per kernel call (5x the measured glue): an untimed op of any size shows up as
  // more. Ops summing above the wall time would mean double counting (clock resolution: 0.1%).
  constexpr double kGluePerCall = 1e-6;
  const double glue_per_call = kernel_calls > 0 ? rest_s / kernel_calls : 0.0;
  const bool ok = rest >= -0.001 && (rest <= 0.02 || glue_per_call <= kGluePerCall);
  return {{"ops", rows},
          {"bytes_per_call", traffic_json(bytes, n)},
          {"wall_s_per_call", wall_s / n},
          {"ops_sum_s_per_call", sum / n},
          {"unattributed_share", rest},
          {"unattributed_s_per_kernel_call", glue_per_call},
          {"sum_check", ok ? "ok" : "MISMATCH (ops do not account for the wall time)"}};
}

void LogitsChecksum::add(std::span<const float> logits) {
  const auto* p = reinterpret_cast<const unsigned char*>(logits.data());
  for (std::size_t i = 0; i < logits.size_bytes(); ++i) {
    h_ ^= p[i];
    h_ *= 0x100000001b3ull;
  }
}

std::string LogitsChecksum::hex() const {
  return fmt::format("{:016x}", h_);
}

}  // namespace k3runner::model
