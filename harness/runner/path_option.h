// k3bench --path: "auto" (the best usable layer) or a layer forced by name; an unusable layer is an
// unsupported case (exit 3), with the dispatcher's reason.
#pragma once

#include <optional>
#include <stdexcept>
#include <string>

#include "harness/runner/errors.h"
#include "k3k/dispatch.h"

namespace k3runner {

inline k3k::PathDecision decide_path_option(const std::string& path) {
  std::optional<k3k::KernelPath> requested;
  if (path != "auto") requested = k3k::parse_kernel_path(path);
  try {
    return k3k::decide_path(requested);
  } catch (const std::invalid_argument& e) {
    throw UnsupportedShape(std::string("--path: ") + e.what());
  }
}

}  // namespace k3runner
