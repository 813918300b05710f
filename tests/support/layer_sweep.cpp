#include "support/layer_sweep.h"

#include <cstdio>
#include <stdexcept>
#include <string>

namespace k3test {

namespace {

constexpr k3k::KernelPath kEveryPath[] = {K3_LAYERS_(K3_LAYER_PATH_, unused)};

// Why decide_path refuses `path` here, or empty when it accepts it.
std::string refusal(k3k::KernelPath path) {
  try {
    k3k::decide_path(path);
    return {};
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
}

// The first lines of the run: which layers the swept tests cover here, and why the others not
// (a layer missing from the sweep must be visible, not just fewer tests).
class ReportSweptLayers : public ::testing::Environment {
 public:
  void SetUp() override {
    std::string line = "[ layers   ] swept:";
    for (k3k::KernelPath p : swept_layers()) line += std::string(" ") + k3k::to_string(p);
    std::printf("%s\n", line.c_str());
    for (k3k::KernelPath p : kEveryPath) {
      if (!layer_runs_here(p)) std::printf("[ layers   ] not swept: %s\n", refusal(p).c_str());
    }
  }
};

[[maybe_unused]] const ::testing::Environment* const kReportSweptLayers =
    ::testing::AddGlobalTestEnvironment(new ReportSweptLayers);

}  // namespace

bool layer_runs_here(k3k::KernelPath path) {
  return k3k::path_compiled(path) && refusal(path).empty();
}

std::vector<k3k::KernelPath> swept_layers() {
  std::vector<k3k::KernelPath> layers;
  for (k3k::KernelPath p : kEveryPath)
    if (layer_runs_here(p)) layers.push_back(p);
  return layers;
}

std::vector<k3k::KernelPath> layer_if_it_runs(k3k::KernelPath path) {
  if (!layer_runs_here(path)) return {};
  return {path};
}

}  // namespace k3test
