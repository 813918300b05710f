// A kernel plugin of another interface version (a build from before or after a change to
// k3bench_plugin.h): the loader must refuse it in one line before calling anything in it.
#include "harness/runner/plugin/k3bench_plugin.h"

extern "C" const k3bench_plugin* k3bench_plugin_interface(void) {
  static const k3bench_plugin table = {K3BENCH_PLUGIN_INTERFACE_VERSION + 1,
                                       sizeof(k3bench_plugin),
                                       nullptr,
                                       nullptr,
                                       nullptr,
                                       nullptr,
                                       nullptr,
                                       nullptr,
                                       nullptr};
  return &table;
}
