// The real-TCM backend through the real dlopen path, against a test double of the vendor library
// (fake_spine_tcm.cpp): library absent, available, no driver, fake-TCM mode, a missing entry point,
// acquire timeout, a block left acquired by a dead process (stale lock detected, then recovered
// only by the explicit force-release), and leases released on every exit path.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <dlfcn.h>

#include "k3k/attention.h"
#include "k3k/embedding.h"
#include "k3k/kv_cache.h"
#include "k3k/linear.h"
#include "k3k/quantize.h"
#include "k3k/small_ops.h"
#include "k3k/tcm.h"
#include "k3k/tcm_linear.h"
#include "tcm/tcm_test_support.h"

namespace k3k {
namespace {

// Sets FAKE_SPINE_TCM_MODE for one test and clears the override variable the backend honours.
class ScopedMode {
 public:
  explicit ScopedMode(const char* mode) {
    ::setenv("FAKE_SPINE_TCM_MODE", mode, 1);
    ::unsetenv("K3_TCM_LIBRARY");
  }
  ~ScopedMode() { ::unsetenv("FAKE_SPINE_TCM_MODE"); }
};

tcm::Opened open_double(tcm::Mode mode, const std::string& library = K3_FAKE_SPINE_TCM) {
  tcm::OpenOptions o;
  o.mode = mode;
  o.library = library;
  return tcm::open(o);
}

// The test double's own counters, read through the handle of the loaded instance.
int double_counter(const char* name) {
  void* h = ::dlopen(K3_FAKE_SPINE_TCM, RTLD_NOLOAD | RTLD_LAZY);
  if (h == nullptr) return -1;
  auto fn = reinterpret_cast<int (*)()>(::dlsym(h, name));
  const int v = fn != nullptr ? fn() : -1;
  ::dlclose(h);
  return v;
}

TEST(TcmLibrary, AbsentLibraryFallsBackToEmulatedWithReason) {
  ScopedMode mode("available");
  auto opened = open_double(tcm::Mode::kAuto, "/nonexistent/libspine_tcm.so");
  ASSERT_NE(opened.tcm, nullptr);
  EXPECT_EQ(opened.tcm->backend(), tcm::Backend::kEmulated);
  EXPECT_NE(opened.reason.find("not loadable"), std::string::npos) << opened.reason;
  EXPECT_EQ(opened.tcm->geometry().blocks, 8);
  EXPECT_EQ(opened.tcm->geometry().block_bytes, 384u * 1024);
  // Asking for real TCM explicitly gives none, and says why.
  auto real = open_double(tcm::Mode::kReal, "/nonexistent/libspine_tcm.so");
  EXPECT_EQ(real.tcm, nullptr);
  EXPECT_NE(real.reason.find("real TCM requested but unusable"), std::string::npos) << real.reason;
  // The environment override names the library (how a board points at a non-default path).
  ::setenv("K3_TCM_LIBRARY", K3_FAKE_SPINE_TCM, 1);
  auto via_env = open_double(tcm::Mode::kAuto, "/nonexistent/libspine_tcm.so");
  ::unsetenv("K3_TCM_LIBRARY");
  ASSERT_NE(via_env.tcm, nullptr);
  EXPECT_EQ(via_env.tcm->backend(), tcm::Backend::kReal) << via_env.reason;
}

TEST(TcmLibrary, AvailableLibraryGivesRealBackend) {
  ScopedMode mode("available");
  auto opened = open_double(tcm::Mode::kAuto);
  ASSERT_NE(opened.tcm, nullptr) << opened.reason;
  EXPECT_EQ(opened.tcm->backend(), tcm::Backend::kReal);
  EXPECT_EQ(opened.tcm->geometry().blocks, 8);
  EXPECT_EQ(opened.tcm->geometry().block_bytes, 393216u);
  EXPECT_NE(opened.tcm->describe().find("0.2.0-test-double"), std::string::npos)
      << opened.tcm->describe();
  std::byte* block3 = opened.tcm->map(3);
  ASSERT_NE(block3, nullptr);
  block3[0] = std::byte{42};               // writable memory
  EXPECT_EQ(opened.tcm->map(8), nullptr);  // out of range
  opened.tcm->unmap(3);
  EXPECT_EQ(opened.tcm->status(5).cpu_mask, std::uint64_t{1} << 13);  // block 5 = CPU 13
}

TEST(TcmLibrary, NoDriverIsRefused) {
  ScopedMode mode("unavailable");
  auto real = open_double(tcm::Mode::kReal);
  EXPECT_EQ(real.tcm, nullptr);
  EXPECT_NE(real.reason.find("no TCM driver"), std::string::npos) << real.reason;
  auto fallback = open_double(tcm::Mode::kAuto);
  ASSERT_NE(fallback.tcm, nullptr);
  EXPECT_EQ(fallback.tcm->backend(), tcm::Backend::kEmulated);
}

TEST(TcmLibrary, FakeTcmIsRefused) {
  // The library's fake mode: available reports 1 but the memory is ordinary. Must not count as
  // real.
  ScopedMode mode("fake");
  ::setenv("FAKE_SPINE_TCM_MODE", "fake", 1);
  auto real = open_double(tcm::Mode::kReal);
  EXPECT_EQ(real.tcm, nullptr);
  EXPECT_TRUE(real.reason.find("fake-TCM") != std::string::npos ||
              real.reason.find("no TCM driver") != std::string::npos)
      << real.reason;
}

TEST(TcmLibrary, IncompatibleLibraryIsRefused) {
  ScopedMode mode("available");
  auto real = open_double(tcm::Mode::kReal, K3_FAKE_SPINE_TCM_NO_QUERY);
  EXPECT_EQ(real.tcm, nullptr);
  EXPECT_NE(real.reason.find("lacks spine_tcm_runtime_mem_query"), std::string::npos)
      << real.reason;
}

TEST(TcmLibrary, AcquireTimesOutWhileAnotherThreadHoldsTheBlock) {
  ScopedMode mode("available");
  auto opened = open_double(tcm::Mode::kReal);
  ASSERT_NE(opened.tcm, nullptr) << opened.reason;
  tcm::Tcm& t = *opened.tcm;
  std::atomic<bool> held{false}, done{false};
  std::thread holder([&] {
    tcm::BlockLease lease(t, 2, std::chrono::microseconds(0));
    held.store(lease.held());
    while (!done.load()) std::this_thread::yield();
  });
  while (!held.load()) std::this_thread::yield();
  EXPECT_TRUE(t.status(2).acquired);
  EXPECT_FALSE(t.status(2).stale());  // the holder is alive
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_FALSE(t.acquire(2, std::chrono::microseconds(3000)));
  EXPECT_GE(std::chrono::steady_clock::now() - t0, std::chrono::microseconds(3000));
  done.store(true);
  holder.join();
  EXPECT_FALSE(t.status(2).acquired);  // the lease released on scope exit
  EXPECT_TRUE(t.acquire(2, std::chrono::microseconds(0)));
  t.release(2);
}

TEST(TcmLibrary, BlockLeftByDeadProcessIsReportedStaleAndRecoveredOnlyOnRequest) {
  const std::string state = (std::filesystem::temp_directory_path() /
                             ("k3-fake-tcm-" + std::to_string(::getpid()) + ".state"))
                                .string();
  std::filesystem::remove(state);
  ::setenv("FAKE_SPINE_TCM_STATE", state.c_str(), 1);
  {
    ScopedMode mode("available");
    auto opened = open_double(tcm::Mode::kReal);
    ASSERT_NE(opened.tcm, nullptr) << opened.reason;
    tcm::Tcm& t = *opened.tcm;
    const pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      // A run killed while holding block 6: acquire, then die without releasing.
      ::_exit(t.acquire(6, std::chrono::microseconds(0)) ? 0 : 1);
    }
    int status = 0;
    ASSERT_EQ(::waitpid(child, &status, 0), child);
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child could not acquire block 6";
    const tcm::BlockStatus s = t.status(6);
    EXPECT_TRUE(s.acquired);
    EXPECT_EQ(s.owner_tid, child);
    EXPECT_TRUE(s.stale());
    const auto stale = tcm::stale_blocks(t);
    ASSERT_EQ(stale.size(), 1u);
    EXPECT_EQ(stale[0].id, 6);
    // Nothing recovers it implicitly: acquiring times out, the pipeline gate counts it unusable.
    EXPECT_FALSE(t.acquire(6, std::chrono::microseconds(2000)));
    WorkerPool pool(8);
    TcmWorkspace ws(t, pool);
    EXPECT_EQ(ws.usable_blocks(), 7);
    // The explicit recovery command.
    EXPECT_TRUE(t.force_release(6));
    EXPECT_FALSE(t.status(6).acquired);
    EXPECT_TRUE(tcm::stale_blocks(t).empty());
    EXPECT_TRUE(t.acquire(6, std::chrono::microseconds(0)));
    t.release(6);
  }
  ::unsetenv("FAKE_SPINE_TCM_STATE");
  std::filesystem::remove(state);
}

TEST(TcmLibrary, PipelineReleasesEveryBlockOnEveryExitPath) {
  ScopedMode mode("available");
  auto opened = open_double(tcm::Mode::kReal);
  ASSERT_NE(opened.tcm, nullptr) << opened.reason;
  WorkerPool pool(6);
  TcmWorkspace ws(*opened.tcm, pool);
  const W4B64Packed w = tcm_test::random_weights(2048, 2048, 1);
  const PackedActivations act = tcm_test::decode_row(2048, 2);
  std::vector<float> dram(2048), out(2048);
  k3k::linear_decode_w4b64(KernelPath::kGeneric, act, w, {}, dram.data(), pool, {});
  const int waits_before = double_counter("fake_spine_tcm_try_waits");
  const int releases_before = double_counter("fake_spine_tcm_releases");
  const tcm_test::TcmDecodeResult r =
      tcm_test::decode_with_tcm(KernelPath::kGeneric, act, w, {}, out.data(), pool, &ws, {});
  ASSERT_TRUE(r.gate.use_tcm) << r.gate.reason;
  EXPECT_EQ(std::memcmp(out.data(), dram.data(), out.size() * sizeof(float)), 0);
  EXPECT_EQ(double_counter("fake_spine_tcm_try_waits") - waits_before,
            6);  // one hand-off per worker
  EXPECT_EQ(double_counter("fake_spine_tcm_releases") - releases_before, 6);
  EXPECT_EQ(double_counter("fake_spine_tcm_acquired_blocks"), 0);
  // Exit by exception (bad arguments found after the gate): nothing is left acquired either.
  LinearTiling bad;
  bad.tile_n = 0;
  EXPECT_THROW(
      tcm_test::decode_with_tcm(KernelPath::kGeneric, act, w, {}, out.data(), pool, &ws, {}, bad),
      std::invalid_argument);
  EXPECT_EQ(double_counter("fake_spine_tcm_acquired_blocks"), 0);
  {
    tcm::BlockLease lease(*opened.tcm, 0, std::chrono::microseconds(0));
    EXPECT_TRUE(lease.held());
    EXPECT_EQ(double_counter("fake_spine_tcm_acquired_blocks"), 1);
  }
  EXPECT_EQ(double_counter("fake_spine_tcm_acquired_blocks"), 0);
}

}  // namespace
}  // namespace k3k
