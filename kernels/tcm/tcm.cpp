// Backend choice and the backend-independent helpers.
#include "k3k/tcm.h"

#include <signal.h>

#include <cerrno>
#include <cstdlib>

namespace k3k::tcm {

const char* to_string(Backend backend) {
  switch (backend) {
    case Backend::kOff:
      return "off";
    case Backend::kEmulated:
      return "emulated";
    case Backend::kReal:
      return "real";
  }
  return "?";
}

std::optional<Mode> parse_mode(const std::string& name) {
  if (name == "auto") return Mode::kAuto;
  if (name == "real") return Mode::kReal;
  if (name == "emulated") return Mode::kEmulated;
  if (name == "off") return Mode::kOff;
  return std::nullopt;
}

Opened open(const OpenOptions& options) {
  Opened result;
  if (options.mode == Mode::kOff) {
    result.reason = "TCM off by request";
    return result;
  }
  if (options.mode == Mode::kEmulated) {
    result.tcm = make_emulated(options.emulated_geometry);
    result.reason = "emulated by request";
    return result;
  }
  std::string library = options.library;
  if (const char* env = std::getenv("K3_TCM_LIBRARY"); env != nullptr && *env != '\0')
    library = env;
  std::string why;
  result.tcm = load_spine_library(library, &why);
  if (result.tcm) {
    result.reason = "vendor library " + library;
    return result;
  }
  if (options.mode == Mode::kReal) {
    result.reason = "real TCM requested but unusable: " + why;
    return result;
  }
  result.tcm = make_emulated(options.emulated_geometry);
  result.reason = "real TCM unusable (" + why + "); emulated";
  return result;
}

bool thread_alive(int tid) {
  if (tid <= 0) return false;
  // Signal 0 checks existence only; EPERM means it exists but belongs to another user.
  return ::kill(tid, 0) == 0 || errno == EPERM;
}

std::vector<BlockStatus> stale_blocks(Tcm& tcm) {
  std::vector<BlockStatus> stale;
  for (int id = 0; id < tcm.geometry().blocks; ++id) {
    const BlockStatus s = tcm.status(id);
    if (s.stale()) stale.push_back(s);
  }
  return stale;
}

}  // namespace k3k::tcm
