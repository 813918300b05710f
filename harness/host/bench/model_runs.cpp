#include "harness/host/bench/model_runs.h"

namespace k3bench {

std::vector<std::tuple<std::string, std::map<std::string, std::string>, std::string>>
model_run_shapes(const k3model::ModelConfig& model, const ModelRuns& runs) {
  std::vector<std::tuple<std::string, std::map<std::string, std::string>, std::string>> out;
  for (const int pp : runs.prompt_lengths) {
    auto shape = model.shape_values();
    shape["pp"] = std::to_string(pp);
    out.emplace_back("model_pp", shape, "pp" + std::to_string(pp));
  }
  for (const int tg : runs.decode_steps) {
    auto shape = model.shape_values();
    shape["pp"] = std::to_string(runs.decode_prompt);
    shape["tg"] = std::to_string(tg);
    out.emplace_back("model_tg", shape, "tg" + std::to_string(tg));
  }
  return out;
}

}  // namespace k3bench
