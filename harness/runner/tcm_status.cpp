#include "harness/runner/tcm_status.h"

#include <iostream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "harness/runner/errors.h"
#include "harness/runner/placement.h"
#include "harness/runner/tcm_context.h"

namespace k3runner {

namespace {

nlohmann::json block_json(const k3k::tcm::BlockStatus& s) {
  return {{"id", s.id},
          {"acquired", s.acquired},
          {"owner_tid", s.owner_tid},
          {"owner_alive", s.owner_alive},
          {"stale", s.stale()},
          {"cpu_mask", fmt::format("{:#x}", s.cpu_mask)}};
}

const TcmContext& open_or_fail(const std::string& mode) {
  const TcmContext& c = tcm_context(mode);
  if (c.tcm == nullptr) throw UnsupportedShape("TCM: " + c.reason);
  return c;
}

}  // namespace

nlohmann::json tcm_status_json(const std::string& mode) {
  const TcmContext& c = tcm_context(mode);
  nlohmann::json out = {{"requested", mode}, {"reason", c.reason}};
  if (c.tcm == nullptr) {
    out["backend"] = "off";
  } else {
    const auto g = c.tcm->geometry();
    out["backend"] = k3k::tcm::to_string(c.tcm->backend());
    out["describe"] = c.tcm->describe();
    out["geometry"] = {{"blocks", g.blocks}, {"block_bytes", g.block_bytes}};
    nlohmann::json blocks = nlohmann::json::array(), stale = nlohmann::json::array();
    for (int id = 0; id < g.blocks; ++id) {
      const auto s = c.tcm->status(id);
      blocks.push_back(block_json(s));
      if (s.stale()) stale.push_back(id);
    }
    out["blocks"] = blocks;
    out["stale_blocks"] = stale;
  }
  return out;
}

int run_tcm_status(const std::string& mode, bool json) {
  const TcmContext& c = tcm_context(mode);
  const nlohmann::json out = tcm_status_json(mode);
  if (json) {
    std::cout << out.dump(2) << "\n";
    return 0;
  }
  fmt::print("TCM backend {} ({})\n", out["backend"].get<std::string>(), c.reason);
  if (c.tcm == nullptr) return 0;
  for (const auto& b : out["blocks"]) {
    fmt::print("  block {}  {}\n", b["id"].get<int>(),
               !b["acquired"].get<bool>() ? std::string("free")
               : b["stale"].get<bool>()
                   ? fmt::format("STALE: held by dead tid {}", b["owner_tid"].get<int>())
                   : fmt::format("held by live tid {}", b["owner_tid"].get<int>()));
  }
  if (!out["stale_blocks"].empty()) {
    fmt::print(
        "stale locks on blocks {}: recover with k3bench --tcm-force-release {} (or k3tune tcm "
        "release)\n",
        out["stale_blocks"].dump(),
        out["stale_blocks"].size() == 1 ? out["stale_blocks"][0].dump() : "all");
  }
  return 0;
}

int run_tcm_force_release(const std::string& mode, const std::string& blocks, bool force,
                          bool json) {
  const TcmContext& c = open_or_fail(mode);
  const int count = c.tcm->geometry().blocks;
  std::vector<int> ids;
  if (blocks == "all") {
    for (const auto& s : k3k::tcm::stale_blocks(*c.tcm)) ids.push_back(s.id);
  } else {
    for (int id : parse_cpu_list(blocks, "--tcm-force-release")) {
      if (id >= count)
        throw UsageError(
            fmt::format("--tcm-force-release: block {} out of range (0..{})", id, count - 1));
      ids.push_back(id);
    }
  }
  nlohmann::json results = nlohmann::json::array();
  bool all_ok = true;
  for (int id : ids) {
    const auto before = c.tcm->status(id);
    std::string action;
    if (!before.acquired) {
      action = "already free";
    } else if (!before.stale() && !force) {
      action = fmt::format("refused: held by live tid {} (add --force to take it anyway)",
                           before.owner_tid);
      all_ok = false;
    } else {
      action =
          c.tcm->force_release(id) && !c.tcm->status(id).acquired ? "released" : "release failed";
      all_ok = all_ok && action == "released";
    }
    results.push_back({{"block", id}, {"before", block_json(before)}, {"action", action}});
    if (!json) fmt::print("block {}: {}\n", id, action);
  }
  if (json)
    std::cout << nlohmann::json{{"backend", k3k::tcm::to_string(c.tcm->backend())},
                                {"results", results}}
                     .dump(2)
              << "\n";
  if (!json && ids.empty()) fmt::print("no stale blocks\n");
  return all_ok ? 0 : 4;
}

}  // namespace k3runner
