#include "harness/runner/kernel_plugin.h"

#include <dlfcn.h>

#include <stdexcept>

#include <fmt/format.h>

#include "harness/runner/case_json.h"
#include "harness/runner/errors.h"

namespace k3runner {
namespace {

// The plugin's error in its own exit class, prefixed with the option that brought it in.
[[noreturn]] void rethrow(const k3bench_plugin_error& e) {
  const std::string what = std::string("--build-b: ") + e.message;
  if (e.exit_code == kExitUsage) throw UsageError(what);
  if (e.exit_code == kExitUnsupported) throw UnsupportedShape(what);
  throw std::runtime_error(what);
}

// One case of the plugin's build. Its figures come from the plugin as the result document's own
// JSON (case_json.h); its output checksum comes with the check, taken inside the plugin.
class PluginCase final : public OpCase {
 public:
  PluginCase(const k3bench_plugin* api, k3bench_plugin_case* handle) : api_(api), handle_(handle) {
    const nlohmann::json d = describe();
    path_name_ = d.at("path").get<std::string>();
    rotation_ = d.at("rotation").get<int>();
  }
  ~PluginCase() override { api_->destroy(handle_); }
  void run_once() override { api_->run_once(handle_); }
  Traffic traffic() const override { return traffic_from_json(describe().at("traffic")); }
  Accuracy check(bool full) override {
    k3bench_plugin_error e{};
    const char* text = api_->check(handle_, full ? 1 : 0, &e);
    if (text == nullptr) rethrow(e);
    return accuracy_from_json(nlohmann::json::parse(text));
  }
  nlohmann::json params_used() const override { return describe().at("params"); }
  std::string path() const override { return path_name_; }
  std::vector<DumpArray> dump_arrays() const override { return {}; }
  std::vector<std::string> output_names() const override { return {}; }
  int rotation() const override { return rotation_; }
  nlohmann::json dispatch() const { return describe().at("dispatch"); }

 private:
  nlohmann::json describe() const {
    k3bench_plugin_error e{};
    const char* text = api_->describe(handle_, &e);
    if (text == nullptr) rethrow(e);
    return nlohmann::json::parse(text);
  }
  const k3bench_plugin* api_;
  k3bench_plugin_case* handle_;
  std::string path_name_;
  int rotation_ = 1;
};

}  // namespace

std::unique_ptr<KernelPlugin> KernelPlugin::load(const std::string& path) {
#ifdef K3BENCH_NO_PLUGINS
  throw UsageError(fmt::format(
      "--build-b: {}: this k3bench is statically linked and cannot load a second build; use a "
      "dynamically linked runner (the host build, or the rvv-dynamic preset on a board)",
      path));
#else
  // A namespace of its own: the plugin's kernels, op drivers and their static state (worker
  // pools, the weight cache, the run settings) are separate copies, not this build's symbols.
  void* handle = ::dlmopen(LM_ID_NEWLM, path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = ::dlerror();
    throw UsageError(fmt::format("--build-b: {}: not loadable as a kernel plugin: {}", path,
                                 why != nullptr ? why : "unknown dlmopen error"));
  }
  using Entry = const k3bench_plugin* (*)();
  auto entry = reinterpret_cast<Entry>(::dlsym(handle, K3BENCH_PLUGIN_ENTRY));
  if (entry == nullptr)
    throw UsageError(fmt::format("--build-b: {}: not a kernel plugin (no {} symbol)", path,
                                 K3BENCH_PLUGIN_ENTRY));
  const k3bench_plugin* api = entry();
  if (api == nullptr || api->interface_version != K3BENCH_PLUGIN_INTERFACE_VERSION ||
      api->struct_size != sizeof(k3bench_plugin)) {
    throw UsageError(fmt::format(
        "--build-b: {}: kernel plugin interface version {} (size {}), this k3bench speaks "
        "version {} (size {}): rebuild one of the two",
        path, api != nullptr ? api->interface_version : 0u, api != nullptr ? api->struct_size : 0u,
        K3BENCH_PLUGIN_INTERFACE_VERSION, sizeof(k3bench_plugin)));
  }
  return std::unique_ptr<KernelPlugin>(new KernelPlugin(path, api));
#endif
}

nlohmann::json KernelPlugin::build() const {
  return nlohmann::json::parse(api_->build_json());
}

void KernelPlugin::configure(const RunSettings& s) const {
  const nlohmann::json j = {{"cpus", s.cpus},
                            {"pool_wait", s.pool_wait},
                            {"huge_pages", s.huge_pages},
                            {"weight_load", s.weight_load}};
  k3bench_plugin_error e{};
  if (api_->configure(j.dump().c_str(), &e) != 0) rethrow(e);
}

std::unique_ptr<OpCase> KernelPlugin::make_case(const std::string& op, const std::string& shape,
                                                const std::string& params, std::uint64_t seed,
                                                const std::string& path) const {
  const nlohmann::json spec = {
      {"op", op}, {"shape", shape}, {"params", params}, {"seed", seed}, {"path", path}};
  k3bench_plugin_error e{};
  k3bench_plugin_case* handle = api_->create(spec.dump().c_str(), &e);
  if (handle == nullptr) rethrow(e);
  try {
    return std::make_unique<PluginCase>(api_, handle);
  } catch (...) {
    api_->destroy(handle);
    throw;
  }
}

nlohmann::json plugin_dispatch(const OpCase& c) {
  const auto* p = dynamic_cast<const PluginCase*>(&c);
  return p != nullptr ? p->dispatch() : nlohmann::json(nullptr);
}

}  // namespace k3runner
