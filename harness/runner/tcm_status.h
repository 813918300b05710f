// k3bench's TCM commands: --tcm-status reports the backend and every block's hand-off state
// (stale locks included); --tcm-force-release clears blocks left acquired by a dead process, and
// only the blocks the operator names, only when they are stale unless --force is given.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace k3runner {

// The status document: backend, reason, geometry, every block and the stale ones.
nlohmann::json tcm_status_json(const std::string& mode);
// Exit 0; with stale blocks present the status still succeeds (it is a report), and says so.
int run_tcm_status(const std::string& mode, bool json);
// blocks: "all" (every stale block) or a list like "0,3". Exit 0 when every named block is free
// afterwards, 4 when one could not be released, 2 on a malformed list.
int run_tcm_force_release(const std::string& mode, const std::string& blocks, bool force,
                          bool json);

}  // namespace k3runner
