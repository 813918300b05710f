// The generic (portable C++) layer: its microkernels, bound into one table for dispatch. Names
// follow the contracts in kernels/ukernels/.
#pragma once

#include <cstdint>
#include <memory>

#include "cpu/layer_probe.h"
#include "ukernels/layer.h"

namespace k3k::generic {

#include "ukernels/layer_microkernels.inc"  // NOLINT(bugprone-suspicious-include)

const ukernel::LayerKernels& kernels();

}  // namespace k3k::generic
