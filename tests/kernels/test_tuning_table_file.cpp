// A tuning table as a file the kernel library loads (k3k/tuning.h) and what the auto Linear entry
// points (k3k/linear_auto.h) do with it: a table for another board refused while the loaded one
// stays, loading refused while an auto call runs, auto calls bitwise equal to explicit calls with
// the table's parameters, and the decode_path gate choosing the layer pack_linear_auto packs for.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <utility>

#include <nlohmann/json.hpp>

#include "k3k/linear_auto.h"
#include "k3k/tuning.h"
#include "linear_test_support.h"
#include "support/scratch_dir.h"
#include "tuning_table_support.h"

namespace k3k {
namespace {

using namespace tuning_test;

class TuningTableFile : public ::testing::Test {
 protected:
  void SetUp() override { clear_tuning_table(); }
  void TearDown() override { clear_tuning_table(); }
  std::string write(const std::string& name, const json& t) const {
    const auto p = (dir_ / name).string();
    std::ofstream(p) << t.dump(2);
    return p;
  }
  k3test::ScratchDir dir_{"k3k_tuning_"};
};

TEST_F(TuningTableFile, ATableForAnotherBoardIsRefusedAndTheLoadedOneStays) {
  const BoardFingerprint here = running_board();
  const auto good = write("good.json", valid_table(here));
  const TableLoad l = load_tuning_table(good);
  ASSERT_TRUE(l.loaded) << l.problem;
  EXPECT_EQ(l.entries, 2u);
  const TuningTable* active = active_tuning_table();
  ASSERT_NE(active, nullptr);
  BoardFingerprint other = here;
  other.cpus += 1;
  const auto bad = write("other.json", valid_table(other));
  testing::internal::CaptureStderr();
  const TableLoad r = load_tuning_table(bad);
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_FALSE(r.loaded);
  EXPECT_NE(r.problem.find("/board/fingerprint/cpus: made for"), std::string::npos) << r.problem;
  EXPECT_EQ(err, "k3k: tuning table " + bad + ": " + r.problem + "; using the built-in defaults\n");
  EXPECT_EQ(active_tuning_table(), active);  // the earlier table stays
  EXPECT_EQ(last_table_load().problem, r.problem);
  const TableLoad missing = load_tuning_table((dir_ / "missing.json").string());
  EXPECT_EQ(missing.problem, "cannot be read");
}

TEST_F(TuningTableFile, LoadingIsRefusedWhileAnAutoCallRuns) {
  const auto path = write("t.json", valid_table(running_board()));
  {
    TuningTableUse in_flight;  // what an auto entry point holds while it runs
    testing::internal::CaptureStderr();
    const TableLoad r = load_tuning_table(path);
    testing::internal::GetCapturedStderr();
    EXPECT_FALSE(r.loaded);
    EXPECT_NE(r.problem.find("running on other threads"), std::string::npos) << r.problem;
    EXPECT_EQ(active_tuning_table(), nullptr);
  }
  EXPECT_TRUE(load_tuning_table(path).loaded);
}

TEST_F(TuningTableFile, AutoCallsAreBitwiseEqualToExplicitCallsWithTheTablesParameters) {
  using namespace linear_test;
  const std::int64_t n = 96, k = 256;
  const Weights w = make_weights(KernelPath::kGeneric, n, k, 11);
  WorkerPool pool(2);
  // The table names the layer the dispatcher would pick anyway (it must be usable here).
  const std::string layer = to_string(decide_path().path);
  json t = valid_table(running_board(), layer);
  t["entries"][0]["params"] = {{"tile_n", 32}, {"workers", 1}};
  ASSERT_TRUE(load_tuning_table(write("t.json", t)).loaded);
  const AutoLinearWeights aw = pack_linear_auto(w.storage.deep_copy());
  EXPECT_EQ(to_string(aw.path), layer);
  EXPECT_EQ(aw.path_reason, "table entry linear_decode/" + layer + "/k256/n96");
  EXPECT_EQ(aw.decode.tiling.tile_n, 32);
  EXPECT_EQ(aw.decode.tiling.max_workers, 1);
  EXPECT_EQ(aw.prefill[3].tiling.tile_n, 64);  // bucket 8

  const std::vector<float> bias = normal_vector(n, 5, 0.5);
  LinearEpilogue ep;
  ep.bias = bias.data();
  {
    const Acts a = quantize(KernelPath::kGeneric, make_activations(1, k, 7), 1, k, true, pool);
    std::vector<float> automatic(sz(n)), explicit_call(sz(n));
    linear_decode_auto(aw, a.pack, ep, automatic.data(), pool);
    linear_decode_w4b64(aw.path, a.pack, aw.packed, ep, explicit_call.data(), pool,
                        LinearTiling{32, 1});
    EXPECT_EQ(std::memcmp(automatic.data(), explicit_call.data(), automatic.size() * sizeof(float)),
              0);
  }
  {
    const std::int64_t m = 6;
    const Acts a = quantize(KernelPath::kGeneric, make_activations(m, k, 8), m, k, false, pool);
    std::vector<float> automatic(sz(m * n)), explicit_call(sz(m * n));
    linear_prefill_auto(aw, a.pack, ep, automatic.data(), pool);
    linear_prefill_w4b64(aw.path, a.pack, aw.packed, ep, explicit_call.data(), pool,
                         LinearTiling{64, 0});
    EXPECT_EQ(std::memcmp(automatic.data(), explicit_call.data(), automatic.size() * sizeof(float)),
              0);
  }
  // Without a table: the defaults and the best usable layer.
  clear_tuning_table();
  const AutoLinearWeights plain = pack_linear_auto(w.storage.deep_copy());
  EXPECT_EQ(plain.table, nullptr);
  EXPECT_EQ(plain.decode.tiling.tile_n, LinearTiling{}.tile_n);
  EXPECT_EQ(plain.path, decide_path().path);
}

// pack_linear_auto follows the table's decode_path gate for a weight no entry names: ime2 at and
// above the threshold, rvv below, each only where the layer is usable here (the ime2-emu tree under
// qemu at VLEN 1024 runs both; elsewhere the gate's refused choice falls back, and says so). Named
// Ime2* so the riscv64 trees run it under qemu.
class Ime2DecodePathGate : public TuningTableFile {
 protected:
  // The layer pack_linear_auto must take when the gate asks for `wanted`, and the reason's start.
  static std::pair<KernelPath, std::string> expected(KernelPath wanted, const std::string& why) {
    const std::string gate = std::string("table gates/decode_path");
    try {
      return {decide_path(wanted).path, gate + ": " + to_string(wanted) + " (" + why + ")"};
    } catch (const std::invalid_argument& e) {
      return {decide_path().path,
              gate + " chose " + to_string(wanted) + " (" + why + "), refused: " + e.what() + "; "};
    }
  }
  // Packs an N x K weight with the table loaded, checks the layer, its layout and the reason, and
  // that a decode call through the auto entry point equals the explicit call on that packing.
  void check(std::int64_t n, std::int64_t k, KernelPath wanted, const std::string& why) {
    using namespace linear_test;
    const Weights w = make_weights(KernelPath::kGeneric, n, k, 21);
    const AutoLinearWeights aw = pack_linear_auto(w.storage.deep_copy());
    const auto [path, reason] = expected(wanted, why);
    // In the XML report (--gtest_output=xml): which layer each run took, and why.
    RecordProperty(std::to_string(n) + "x" + std::to_string(k), aw.path_reason);
    EXPECT_EQ(aw.path, path) << n << "x" << k << ": " << aw.path_reason;
    EXPECT_EQ(aw.path_reason.rfind(reason, 0), 0u) << aw.path_reason << "\nexpected " << reason;
    EXPECT_EQ(aw.packed.layout, pack_for(path, w.storage).layout);
    WorkerPool pool(2);
    const Acts a = quantize(aw.path, make_activations(1, k, 22), 1, k, true, pool);
    std::vector<float> automatic(sz(n)), explicit_call(sz(n));
    linear_decode_auto(aw, a.pack, LinearEpilogue{}, automatic.data(), pool);
    linear_decode_w4b64(aw.path, a.pack, aw.packed, LinearEpilogue{}, explicit_call.data(), pool,
                        aw.decode.tiling);
    EXPECT_EQ(std::memcmp(automatic.data(), explicit_call.data(), automatic.size() * sizeof(float)),
              0);
  }
};

TEST_F(Ime2DecodePathGate, ChoosesIme2AboveTheThresholdAndRvvBelow) {
  const std::int64_t n = 64, k_min = 512, w_min = n * k_min;
  json t = valid_table(running_board());
  t["gates"]["decode_path"] = {{"use", "threshold"}, {"k_min", k_min}, {"w_min", w_min}};
  ASSERT_TRUE(load_tuning_table(write("t.json", t)).loaded);
  check(n, k_min, KernelPath::kIme2, "K 512 >= k_min 512, N*K 32768 >= w_min 32768");
  check(n, 2 * k_min, KernelPath::kIme2, "K 1024 >= k_min 512, N*K 65536 >= w_min 32768");
  check(n, k_min / 2, KernelPath::kRvv, "K 256 < k_min 512");
  check(n / 2, k_min, KernelPath::kRvv, "N*K 16384 < w_min 32768");
}

TEST_F(Ime2DecodePathGate, AnEntryForTheExactShapeWinsOverTheGate) {
  const std::int64_t n = 64, k = 512;
  const KernelPath best = decide_path().path;
  json t = valid_table(running_board());
  t["gates"]["decode_path"] = {{"use", best == KernelPath::kIme2 ? "never" : "always"}};
  t["entries"].push_back(
      entry("linear_decode", to_string(best), {{"k", k}, {"n", n}}, {{"tile_n", 32}}));
  ASSERT_TRUE(load_tuning_table(write("t.json", t)).loaded);
  const linear_test::Weights w = linear_test::make_weights(KernelPath::kGeneric, n, k, 23);
  const AutoLinearWeights aw = pack_linear_auto(w.storage.deep_copy());
  EXPECT_EQ(aw.path, best);
  EXPECT_EQ(aw.path_reason,
            "table entry linear_decode/" + std::string(to_string(best)) + "/k512/n64");
  // Another shape: the gate.
  const linear_test::Weights other = linear_test::make_weights(KernelPath::kGeneric, n, 2 * k, 24);
  const AutoLinearWeights g = pack_linear_auto(other.storage.deep_copy());
  EXPECT_EQ(g.path_reason.rfind("table gates/decode_path", 0), 0u) << g.path_reason;
}

TEST(WorkerPoolSubset, ParallelForOnUsesOnlyTheFirstWorkers) {
  WorkerPool pool(2);
  std::vector<int> by(64, -1);
  pool.parallel_for_on(
      1, 64, [&](std::int64_t t, int worker) { by[static_cast<std::size_t>(t)] = worker; });
  for (int w : by) EXPECT_EQ(w, 0);
  std::atomic<int> tasks{0};
  pool.parallel_for_on(0, 100, [&](std::int64_t, int) { tasks.fetch_add(1); });
  EXPECT_EQ(tasks.load(), 100);
}

}  // namespace
}  // namespace k3k
