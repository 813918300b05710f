#include "harness/runner/model/model_tuning.h"

#include <algorithm>
#include <map>
#include <string>

#include <fmt/format.h>

#include "harness/common/model/model_shapes.h"
#include "k3k/linear_auto.h"

namespace k3runner::model {

nlohmann::json apply_table_to_linears(const k3k::TuningTable& table,
                                      const k3model::ModelConfig& config, k3k::KernelPath path,
                                      std::int64_t prefill_tokens, ModelParams& params) {
  nlohmann::json used = nlohmann::json::object();
  for (const auto& s : k3model::derive_op_shapes(config)) {
    if (s.op != "linear_decode" && s.op != "linear_prefill") continue;
    const std::int64_t n = std::stoll(s.shape.at("n")), k = std::stoll(s.shape.at("k"));
    std::map<std::string, std::int64_t> shape = {{"n", n}, {"k", k}};
    if (s.op == "linear_prefill") shape["m"] = std::max<std::int64_t>(prefill_tokens, 1);
    const k3k::LinearAutoChoice c = k3k::choose_linear(&table, s.op, path, shape);
    if (c.entry.empty()) continue;
    const std::string key = fmt::format("{}/n{}/k{}", s.op, n, k);
    params.linear[key] = c.tiling;
    used[key] = c.entry;
  }
  return used;
}

}  // namespace k3runner::model
