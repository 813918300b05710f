#include "harness/host/slurm/slurm_view.h"

namespace k3slurm {

std::map<std::string, nlohmann::json> board_views(const std::vector<std::string>& boards,
                                                  const SlurmClient& slurm) {
  std::map<std::string, nlohmann::json> out;
  try {
    const auto nodes = slurm.nodes(boards);
    for (const auto& b : boards) {
      const auto it = nodes.find(b);
      if (it == nodes.end()) {
        out[b] = {{"error", "not a Slurm node"}};
        continue;
      }
      const NodeView& v = it->second;
      out[b] = {{"state", v.state},
                {"reason", v.reason},
                {"reason_user", v.reason_user},
                {"reason_at", v.reason_at},
                {"jobs", v.jobs}};
    }
  } catch (const std::runtime_error& e) {
    for (const auto& b : boards) out[b] = {{"error", e.what()}};
  }
  return out;
}

bool drained_by_k3tune(const nlohmann::json& view) {
  const std::string state = view.value("state", "");
  return state.rfind("drain", 0) == 0 && view.value("reason", "").rfind("k3tune:", 0) == 0;
}

void resume_board(const std::string& board, const SlurmClient& slurm) {
  slurm.resume(board);
}

}  // namespace k3slurm
