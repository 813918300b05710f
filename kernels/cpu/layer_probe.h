// A layer's CPU probe: how the layer decides, from the facts of k3k/cpu.h, whether this CPU runs
// it. Each layer defines its own next to its microkernels (rvv/layer_rvv.cpp, ime2/probe.cpp) and
// hands it to dispatch with them, so a build without a layer contains none of its probing code.
#pragma once

#include <optional>
#include <string>

namespace k3k {

struct LayerProbe {
  // nullopt when this CPU runs the layer, else why not. Evaluated once per process by the layer.
  std::optional<std::string> (*refused)();
  // How the probe passed, for reports ("" when there is nothing to say).
  std::string (*passed)();
  // The layer's special instructions run as software models: correct, but timings are meaningless.
  bool emulated;
};

}  // namespace k3k
