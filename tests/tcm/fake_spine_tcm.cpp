// A test double of the vendor library libspine_tcm.so: the same C ABI (kernels/tcm/spine_api.h)
// over ordinary memory, loaded by the tests through the real dlopen path of kernels/tcm.
//
// Behaviour is chosen per call from the environment, so one library covers the whole matrix:
//   FAKE_SPINE_TCM_MODE   available (default) | unavailable (no driver) | fake (fake-TCM mode)
//   FAKE_SPINE_TCM_STATE  path of a file holding the hand-off state, shared between processes
//                         (a forked child that dies holding a block leaves a stale lock there);
//                         unset: the state is private to the process.
// Built twice: FAKE_SPINE_TCM_OMIT_QUERY leaves out one entry point (an incompatible library).
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "tcm/spine_api.h"

namespace {

constexpr int kBlocks = 8;
constexpr std::size_t kBlockBytes = 384 * 1024;

struct SharedState {
  int owner_tid[kBlocks];  // 0: free
  int maps[kBlocks];
};

std::string mode() {
  const char* m = std::getenv("FAKE_SPINE_TCM_MODE");
  return m != nullptr ? m : "available";
}

// Re-resolved when FAKE_SPINE_TCM_STATE changes, so a test can switch to a shared state file
// even if an earlier test in the same process loaded the library with private state.
SharedState* state() {
  static std::mutex mu;
  static std::string current = "\x01unset";
  static SharedState* s = nullptr;
  std::lock_guard<std::mutex> lock(mu);
  const char* env = std::getenv("FAKE_SPINE_TCM_STATE");
  const std::string path = env != nullptr ? env : "";
  if (s != nullptr && path == current) return s;
  current = path;
  if (path.empty()) {
    static std::vector<std::unique_ptr<SharedState>>
        private_states;  // kept: earlier pointers stay valid
    private_states.push_back(std::make_unique<SharedState>());
    s = private_states.back().get();
    return s;
  }
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT, 0600);
  if (fd < 0 || ::ftruncate(fd, sizeof(SharedState)) != 0) std::abort();
  void* p = ::mmap(nullptr, sizeof(SharedState), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  ::close(fd);
  if (p == MAP_FAILED) std::abort();
  s = static_cast<SharedState*>(p);
  return s;
}

// Freed by the static destructor when the test unloads the library (dlclose), so leak checkers
// see no orphaned block memory.
unsigned char* memory() {
  static const std::unique_ptr<unsigned char, decltype(&std::free)> m(
      static_cast<unsigned char*>(std::aligned_alloc(4096, kBlocks * kBlockBytes)), &std::free);
  return m.get();
}

int tid() {
  return static_cast<int>(::syscall(SYS_gettid));
}
bool valid(int id) {
  return id >= 0 && id < kBlocks;
}
std::atomic_ref<int> owner(int id) {
  return std::atomic_ref<int>(state()->owner_tid[id]);
}

std::atomic<int> g_try_waits{0}, g_releases{0};

}  // namespace

extern "C" {

__attribute__((visibility("default"))) int spine_tcm_runtime_marker = 1;

__attribute__((visibility("default"))) const char* spine_tcm_runtime_version() {
  return "0.2.0-test-double";
}

__attribute__((visibility("default"))) int spine_tcm_runtime_is_available() {
  return mode() == "available" ? 1 : 0;
}

__attribute__((visibility("default"))) int spine_tcm_runtime_layout_info(
    spine_tcm_mem_info_t* info) {
  info->blk_size = kBlockBytes;
  info->blk_num = kBlocks;
  info->is_fake_tcm = mode() == "available" ? 0 : 1;
  return 0;
}

__attribute__((visibility("default"))) int spine_tcm_runtime_mem_info(
    int id, spine_tcm_block_info_t* info) {
  if (!valid(id)) return -1;
  std::memset(info, 0, sizeof *info);
  info->id = id;
  info->va = memory() + static_cast<std::size_t>(id) * kBlockBytes;
  info->size = kBlockBytes;
  info->cpu_affinity_mask = std::uint64_t{1} << (8 + id);
  info->owner_tid = owner(id).load();
  info->is_acquired = info->owner_tid != 0;
  return 0;
}

__attribute__((visibility("default"))) void* spine_tcm_runtime_mem_get(int id) {
  if (!valid(id)) return nullptr;
  std::atomic_ref<int>(state()->maps[id]).fetch_add(1);
  return memory() + static_cast<std::size_t>(id) * kBlockBytes;
}

__attribute__((visibility("default"))) int spine_tcm_runtime_mem_free(int id) {
  if (!valid(id)) return -1;
  std::atomic_ref<int>(state()->maps[id]).fetch_sub(1);
  return 0;
}

__attribute__((visibility("default"))) void* spine_tcm_runtime_mem_try_wait(
    int id, std::size_t timeout_us) {
  if (!valid(id)) return nullptr;
  g_try_waits.fetch_add(1);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::microseconds(timeout_us);
  const int me = tid();
  for (;;) {
    int expected = 0;
    if (owner(id).compare_exchange_strong(expected, me) || expected == me) {
      return memory() + static_cast<std::size_t>(id) * kBlockBytes;
    }
    if (std::chrono::steady_clock::now() >= deadline) return nullptr;
    std::this_thread::yield();
  }
}

__attribute__((visibility("default"))) int spine_tcm_runtime_mem_release(int id) {
  if (!valid(id)) return -1;
  g_releases.fetch_add(1);
  int me = tid();
  return owner(id).compare_exchange_strong(me, 0) ? 0 : -1;
}

__attribute__((visibility("default"))) int spine_tcm_runtime_mem_force_release(int id) {
  if (!valid(id)) return -1;
  owner(id).store(0);
  return 0;
}

#if !defined(FAKE_SPINE_TCM_OMIT_QUERY)
__attribute__((visibility("default"))) int spine_tcm_runtime_mem_query(int id) {
  return valid(id) ? (owner(id).load() != 0 ? 1 : 0) : -1;
}
#endif

// Test hooks (not part of the vendor ABI).
__attribute__((visibility("default"))) int fake_spine_tcm_acquired_blocks() {
  int n = 0;
  for (int id = 0; id < kBlocks; ++id) n += owner(id).load() != 0 ? 1 : 0;
  return n;
}
__attribute__((visibility("default"))) int fake_spine_tcm_try_waits() {
  return g_try_waits.load();
}
__attribute__((visibility("default"))) int fake_spine_tcm_releases() {
  return g_releases.load();
}

}  // extern "C"
