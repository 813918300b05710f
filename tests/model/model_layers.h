// The layers a whole-model test runs here: generic always, RVV where this CPU (or qemu) accepts it.
// (IME2 is left to its own trees: the model tests compare a forward's layers with each other.)
#pragma once

#include <stdexcept>
#include <vector>

#include "k3k/dispatch.h"

namespace k3test {

inline std::vector<k3k::KernelPath> model_layers() {
  std::vector<k3k::KernelPath> out = {k3k::KernelPath::kGeneric};
  if (k3k::path_compiled(k3k::KernelPath::kRvv)) {
    try {
      k3k::decide_path(k3k::KernelPath::kRvv);
      out.push_back(k3k::KernelPath::kRvv);
    } catch (const std::invalid_argument&) {  // compiled, but this CPU has no RVV 1.0
    }
  }
  return out;
}

}  // namespace k3test
