// k3bench --build-b: a second build's kernel plugin (plugin/k3bench_plugin.h) loaded beside this
// build, in a link namespace of its own (dlmopen), so both builds' kernels, op drivers and
// process-wide state (worker pools, weight cache, settings) coexist without one's symbols
// resolving to the other's. Its cases are OpCases like this build's own: measure() alternates
// them with this build's case exactly as it alternates two parameter sets.
#pragma once

#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "harness/runner/op_case.h"
#include "harness/runner/plugin/k3bench_plugin.h"
#include "harness/runner/run_settings.h"

namespace k3runner {

class KernelPlugin {
 public:
  // Loads the plugin at `path`. A missing or unloadable file, a missing entry point or an
  // interface version other than this build's is a UsageError of one line naming the file.
  static std::unique_ptr<KernelPlugin> load(const std::string& path);
  KernelPlugin(const KernelPlugin&) = delete;
  KernelPlugin& operator=(const KernelPlugin&) = delete;
  // Never unloaded: its worker threads and static state live until the process ends.
  ~KernelPlugin() = default;

  const std::string& file() const { return file_; }
  // The plugin's {"runner": {...}, "build": {...}}, as this build reports its own.
  nlohmann::json build() const;
  // Gives the plugin this process's settings (before its first case).
  void configure(const RunSettings& settings) const;
  // A case of the plugin's build: op, shape and params as k=v lists, seed, requested path
  // ("auto" lets the plugin's build choose its own best layer). Errors keep their exit class.
  std::unique_ptr<OpCase> make_case(const std::string& op, const std::string& shape,
                                    const std::string& params, std::uint64_t seed,
                                    const std::string& path) const;

 private:
  KernelPlugin(std::string file, const k3bench_plugin* api) : file_(std::move(file)), api_(api) {}
  std::string file_;
  const k3bench_plugin* api_;
};

// The dispatch decision of a plugin's case (requested path, path taken, reason, emulated), or null
// for a case of this build.
nlohmann::json plugin_dispatch(const OpCase& c);

}  // namespace k3runner
