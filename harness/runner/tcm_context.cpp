#include "harness/runner/tcm_context.h"

#include <map>
#include <memory>
#include <utility>

namespace k3runner {

namespace {
std::map<std::string, std::pair<TcmContext, std::unique_ptr<k3k::tcm::Tcm>>>& opened_backends() {
  static std::map<std::string, std::pair<TcmContext, std::unique_ptr<k3k::tcm::Tcm>>> opened;
  return opened;
}
}  // namespace

nlohmann::json tcm_contexts_json() {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& [mode, entry] : opened_backends()) {
    const TcmContext& c = entry.first;
    out.push_back({{"requested", mode},
                   {"backend", c.tcm != nullptr ? k3k::tcm::to_string(c.tcm->backend()) : "off"},
                   {"describe", c.tcm != nullptr ? c.tcm->describe() : ""},
                   {"reason", c.reason}});
  }
  return out;
}

const TcmContext& tcm_context(const std::string& mode) {
  auto& opened = opened_backends();
  auto it = opened.find(mode);
  if (it == opened.end()) {
    k3k::tcm::OpenOptions options;
    options.mode = k3k::tcm::parse_mode(mode).value_or(k3k::tcm::Mode::kAuto);
    k3k::tcm::Opened o = k3k::tcm::open(options);
    TcmContext context{o.tcm.get(), o.reason};
    it = opened.emplace(mode, std::make_pair(context, std::move(o.tcm))).first;
  }
  return it->second.first;
}

k3k::TcmWorkspace* tcm_workspace(const TcmContext& context, k3k::WorkerPool& pool) {
  if (context.tcm == nullptr) return nullptr;
  static std::map<std::pair<k3k::tcm::Tcm*, k3k::WorkerPool*>, std::unique_ptr<k3k::TcmWorkspace>>
      spaces;
  auto& ws = spaces[{context.tcm, &pool}];
  if (!ws) ws = std::make_unique<k3k::TcmWorkspace>(*context.tcm, pool);
  return ws.get();
}

}  // namespace k3runner
