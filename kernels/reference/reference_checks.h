// The references' argument check: std::invalid_argument with the concatenated arguments (the
// function's name first). Kept apart from the kernels' own (common/checks.h) so that the
// references build from nothing of the kernels.
#pragma once

#include <sstream>
#include <stdexcept>

namespace k3k::reference::detail {

template <typename... Args>
[[noreturn]] void fail(const Args&... args) {
  std::ostringstream os;
  (os << ... << args);
  throw std::invalid_argument(os.str());
}

}  // namespace k3k::reference::detail
