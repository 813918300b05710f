// The layers compiled into this binary, as dispatch hands them out: the only place that knows
// which layers exist (dispatch/layers.cpp). Drivers receive one op's microkernels from here.
#pragma once

#include "cpu/layer_probe.h"
#include "k3k/dispatch.h"
#include "ukernels/layer.h"

namespace k3k::dispatch {

struct Layer {
  KernelPath path;
  const ukernel::LayerKernels& (*kernels)();
  const LayerProbe* probe;  // null: runs on every CPU (the generic layer)
};

// The layer of `path`, or null when it is not compiled in.
const Layer* find_layer(KernelPath path);

// Why `path` cannot run here (not compiled in, or its probe refuses), nullopt when it can.
std::optional<std::string> unusable_because(KernelPath path);

// The microkernels of a usable layer; throws std::invalid_argument naming `op` otherwise.
const ukernel::LayerKernels& usable_kernels(KernelPath path, const char* op);

}  // namespace k3k::dispatch
