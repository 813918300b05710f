// Real TCM through the vendor library, loaded with dlopen so that binaries run on boards (and
// hosts) without it. A library whose driver is missing runs in "fake TCM" mode (ordinary memory
// behind the same API); that is refused here, because results would claim TCM that is not there.
#include <dlfcn.h>

#include "k3k/tcm.h"
#include "tcm/spine_api.h"

namespace k3k::tcm {

namespace {

struct SpineApi {
  spine_tcm_version_fn version = nullptr;
  spine_tcm_is_available_fn is_available = nullptr;
  spine_tcm_layout_info_fn layout_info = nullptr;
  spine_tcm_mem_info_fn mem_info = nullptr;
  spine_tcm_mem_get_fn mem_get = nullptr;
  spine_tcm_mem_free_fn mem_free = nullptr;
  spine_tcm_mem_try_wait_fn mem_try_wait = nullptr;
  spine_tcm_mem_release_fn mem_release = nullptr;
  spine_tcm_mem_force_release_fn mem_force_release = nullptr;
  spine_tcm_mem_query_fn mem_query = nullptr;
};

// Resolves every function; returns the name of the first missing one, or null.
const char* bind(void* scope, SpineApi& api) {
  struct Entry {
    const char* name;
    void** slot;
  };
  const Entry entries[] = {
      {"spine_tcm_runtime_version", reinterpret_cast<void**>(&api.version)},
      {"spine_tcm_runtime_is_available", reinterpret_cast<void**>(&api.is_available)},
      {"spine_tcm_runtime_layout_info", reinterpret_cast<void**>(&api.layout_info)},
      {"spine_tcm_runtime_mem_info", reinterpret_cast<void**>(&api.mem_info)},
      {"spine_tcm_runtime_mem_get", reinterpret_cast<void**>(&api.mem_get)},
      {"spine_tcm_runtime_mem_free", reinterpret_cast<void**>(&api.mem_free)},
      {"spine_tcm_runtime_mem_try_wait", reinterpret_cast<void**>(&api.mem_try_wait)},
      {"spine_tcm_runtime_mem_release", reinterpret_cast<void**>(&api.mem_release)},
      {"spine_tcm_runtime_mem_force_release", reinterpret_cast<void**>(&api.mem_force_release)},
      {"spine_tcm_runtime_mem_query", reinterpret_cast<void**>(&api.mem_query)},
  };
  for (const Entry& e : entries) {
    *e.slot = ::dlsym(scope, e.name);
    if (*e.slot == nullptr) return e.name;
  }
  return nullptr;
}

class SpineTcm final : public Tcm {
 public:
  SpineTcm(void* handle, const SpineApi& api, const Geometry& geometry)
      : handle_(handle), api_(api), geometry_(geometry) {}
  ~SpineTcm() override {
    if (handle_ != nullptr) ::dlclose(handle_);
  }

  Backend backend() const override { return Backend::kReal; }
  Geometry geometry() const override { return geometry_; }
  std::string describe() const override {
    const char* v = api_.version();
    return "real " + std::to_string(geometry_.blocks) + " x " +
           std::to_string(geometry_.block_bytes / 1024) + " KiB (libspine_tcm " +
           (v != nullptr ? v : "?") + ")";
  }
  std::byte* map(int id) override {
    return valid(id) ? static_cast<std::byte*>(api_.mem_get(id)) : nullptr;
  }
  void unmap(int id) override {
    if (valid(id)) api_.mem_free(id);
  }
  bool acquire(int id, std::chrono::microseconds timeout) override {
    if (!valid(id)) return false;
    return api_.mem_try_wait(
               id, static_cast<std::size_t>(timeout.count() < 0 ? 0 : timeout.count())) != nullptr;
  }
  void release(int id) override {
    if (valid(id)) api_.mem_release(id);
  }
  BlockStatus status(int id) override {
    BlockStatus s;
    s.id = id;
    spine_tcm_block_info_t info{};
    if (!valid(id) || api_.mem_info(id, &info) != 0) return s;
    s.acquired = info.is_acquired != 0;
    s.owner_tid = s.acquired ? info.owner_tid : 0;
    s.owner_alive = !s.acquired || thread_alive(info.owner_tid);
    s.cpu_mask = info.cpu_affinity_mask;
    return s;
  }
  bool force_release(int id) override { return valid(id) && api_.mem_force_release(id) == 0; }

 private:
  bool valid(int id) const { return id >= 0 && id < geometry_.blocks; }
  void* handle_;  // null when bound to an instance already in the process
  SpineApi api_;
  Geometry geometry_;
};

}  // namespace

std::unique_ptr<Tcm> load_spine_library(const std::string& library, std::string* why) {
  SpineApi api;
  void* handle = nullptr;
  // An engine may have loaded the library already; bind to that instance instead of a second copy.
  if (::dlsym(RTLD_DEFAULT, "spine_tcm_runtime_marker") == nullptr ||
      bind(RTLD_DEFAULT, api) != nullptr) {
    handle = ::dlopen(library.c_str(), RTLD_LAZY | RTLD_GLOBAL);
    if (handle == nullptr) {
      const char* err = ::dlerror();
      *why = library + " not loadable: " + (err != nullptr ? err : "unknown dlopen error");
      return nullptr;
    }
    if (const char* missing = bind(handle, api)) {
      *why = library + " lacks " + missing;
      ::dlclose(handle);
      return nullptr;
    }
  }
  auto fail = [&](std::string text) -> std::unique_ptr<Tcm> {
    *why = std::move(text);
    if (handle != nullptr) ::dlclose(handle);
    return nullptr;
  };
  if (api.is_available() != 1) return fail(library + " reports no TCM driver (is_available = 0)");
  spine_tcm_mem_info_t layout{};
  if (api.layout_info(&layout) != 0) return fail(library + ": layout_info failed");
  if (layout.is_fake_tcm != 0)
    return fail(library + " is in fake-TCM mode (ordinary memory); refused");
  if (layout.blk_num == 0 || layout.blk_size == 0 || layout.blk_num > 64) {
    return fail(library + ": implausible geometry " + std::to_string(layout.blk_num) + " x " +
                std::to_string(layout.blk_size));
  }
  const Geometry geometry{layout.blk_size, static_cast<int>(layout.blk_num)};
  return std::make_unique<SpineTcm>(handle, api, geometry);
}

}  // namespace k3k::tcm
