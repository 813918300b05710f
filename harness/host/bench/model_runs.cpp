#include "harness/host/bench/model_runs.h"

#include <cstdlib>

namespace k3bench {

std::vector<std::tuple<std::string, std::map<std::string, std::string>, std::string>>
model_run_shapes(const k3model::ModelConfig& model, const ModelRuns& runs) {
  std::vector<std::tuple<std::string, std::map<std::string, std::string>, std::string>> out;
  const auto add = [&](const std::string& op, std::map<std::string, std::string> shape) {
    out.emplace_back(op, shape, model_test_name(op, shape));
  };
  // Depth 0 leaves the key out: the cells of runs without a depth keep their keys.
  const auto with_depth = [&](std::map<std::string, std::string> shape) {
    if (runs.depth > 0) shape["depth"] = std::to_string(runs.depth);
    return shape;
  };
  for (const int pp : runs.prompt_lengths) {
    auto shape = model.shape_values();
    shape["pp"] = std::to_string(pp);
    add("model_pp", with_depth(shape));
  }
  for (const int tg : runs.decode_steps) {
    auto shape = model.shape_values();
    shape["pp"] = std::to_string(runs.depth > 0 ? runs.depth : runs.decode_prompt);
    shape["tg"] = std::to_string(tg);
    add("model_tg", shape);
  }
  for (const auto& [pp, tg] : runs.prefill_then_generate) {
    auto shape = model.shape_values();
    shape["pp"] = std::to_string(pp);
    shape["tg"] = std::to_string(tg);
    add("model_pg", with_depth(shape));
  }
  return out;
}

std::int64_t model_tokens_per_call(const std::string& op, const nlohmann::json& shape) {
  const auto count = [&](const char* key) -> std::int64_t {
    if (!shape.is_object() || !shape.contains(key)) return 0;
    const auto& v = shape.at(key);
    if (v.is_number_integer()) return v.get<std::int64_t>();
    return v.is_string() ? std::atoll(v.get<std::string>().c_str()) : 0;
  };
  if (op == "model_tg") return count("tg");
  if (op == "model_pg") return count("pp") + count("tg");
  if (op == "model_pp") return count("pp");
  return 0;
}

std::string model_test_name(const std::string& op,
                            const std::map<std::string, std::string>& shape) {
  const auto get = [&](const char* key) {
    const auto it = shape.find(key);
    return it == shape.end() ? std::string("0") : it->second;
  };
  // A decode test's depth is its prompt; one token is llama-bench's empty-cache decode.
  if (op == "model_tg") {
    const std::string depth = get("pp");
    return "tg" + get("tg") + (depth == "0" || depth == "1" ? "" : "@d" + depth);
  }
  const std::string depth = get("depth");
  const std::string at = depth == "0" ? "" : "@d" + depth;
  if (op == "model_pg") return "pp" + get("pp") + "+tg" + get("tg") + at;
  return "pp" + get("pp") + at;
}

}  // namespace k3bench
