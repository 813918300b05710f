#include "dispatch/layers.h"

#include <stdexcept>

#include "generic/microkernels.h"
#if defined(K3_HAVE_RVV)
#include "rvv/microkernels.h"
#endif
#if defined(K3_HAVE_IME2)
#include "ime2/microkernels.h"
#endif

namespace k3k::dispatch {

const Layer* find_layer(KernelPath path) {
  static const Layer generic_layer{KernelPath::kGeneric, generic::kernels, nullptr};
#if defined(K3_HAVE_RVV)
  static const Layer rvv_layer{KernelPath::kRvv, rvv::kernels, &rvv::probe()};
#endif
#if defined(K3_HAVE_IME2)
  // IME2 builds always contain the RVV layer (CMake enforces it); the IME2 table builds on it.
  static const Layer ime2_layer{KernelPath::kIme2, ime2::kernels, &ime2::probe()};
#endif
  switch (path) {
    case KernelPath::kGeneric:
      return &generic_layer;
#if defined(K3_HAVE_RVV)
    case KernelPath::kRvv:
      return &rvv_layer;
#endif
#if defined(K3_HAVE_IME2)
    case KernelPath::kIme2:
      return &ime2_layer;
#endif
    default:
      return nullptr;
  }
}

std::optional<std::string> unusable_because(KernelPath path) {
  const Layer* layer = find_layer(path);
  if (layer == nullptr)
    return std::string(to_string(path)) + " layer not compiled into this binary";
  if (layer->probe != nullptr) return layer->probe->refused();
  return std::nullopt;
}

const ukernel::LayerKernels& usable_kernels(KernelPath path, const char* op) {
  const Layer* layer = find_layer(path);
  if (layer == nullptr) {
    throw std::invalid_argument(std::string(op) + ": the " + to_string(path) +
                                " layer is not compiled into this binary");
  }
  if (layer->probe != nullptr) {
    if (auto why = layer->probe->refused()) {
      throw std::invalid_argument(std::string(op) + ": the " + to_string(path) +
                                  " layer cannot run here: " + *why);
    }
  }
  return layer->kernels();
}

}  // namespace k3k::dispatch
