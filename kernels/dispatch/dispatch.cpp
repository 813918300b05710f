#include "k3k/dispatch.h"

#include <stdexcept>

#include "dispatch/layers.h"

namespace k3k {

const char* to_string(KernelPath path) {
  switch (path) {
    case KernelPath::kGeneric:
      return "generic";
    case KernelPath::kRvv:
      return "rvv";
    case KernelPath::kIme2:
      return "ime2";
  }
  return "?";
}

std::optional<KernelPath> parse_kernel_path(std::string_view name) {
  if (name == "generic") return KernelPath::kGeneric;
  if (name == "rvv") return KernelPath::kRvv;
  if (name == "ime2") return KernelPath::kIme2;
  return std::nullopt;
}

bool path_compiled(KernelPath path) {
  return dispatch::find_layer(path) != nullptr;
}

namespace {

// The taken path's decision; how its probe passed is part of the reason (emulated IME2 is correct
// but not fast: reports must say so).
PathDecision taken(KernelPath path, std::string reason) {
  const LayerProbe* probe = dispatch::find_layer(path)->probe;
  if (probe == nullptr) return {path, std::move(reason), false};
  const std::string note = probe->passed();
  return {path, reason + (note.empty() ? "" : " (" + note + ")"), probe->emulated};
}

}  // namespace

PathDecision decide_path(std::optional<KernelPath> requested) {
  if (requested) {
    if (auto why = dispatch::unusable_because(*requested)) {
      throw std::invalid_argument("path " + std::string(to_string(*requested)) +
                                  " unavailable: " + *why);
    }
    return taken(*requested, "forced");
  }
  std::string skipped;
  for (KernelPath p : {KernelPath::kIme2, KernelPath::kRvv}) {
    if (auto why = dispatch::unusable_because(p)) {
      skipped += (skipped.empty() ? "" : "; ") + std::string(to_string(p)) + " refused: " + *why;
      continue;
    }
    return taken(p, skipped.empty() ? std::string("best available") : "best available; " + skipped);
  }
  return {KernelPath::kGeneric, "fallback: " + skipped, false};
}

}  // namespace k3k
