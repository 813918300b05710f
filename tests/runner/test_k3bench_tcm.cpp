// k3bench's TCM surface end to end, on the real binary: the tcm_bw probe (exact data checks on the
// emulated backend), the decode Linear's tcm parameters and gate report, and the stale-lock
// workflow against the vendor-library test double: a process dies holding a block, --tcm-status
// reports it, nothing recovers it implicitly, --tcm-force-release does.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "../support/stale_tcm_lock.h"
#include "k3bench_process.h"

namespace {

using k3test::run_k3bench;
using nlohmann::json;

TEST(K3benchTcm, TcmBwProbeChecksDataAndReportsBackend) {
  for (const char* mode : {"copy_in", "read", "dram_read"}) {
    SCOPED_TRACE(mode);
    const auto r = run_k3bench(
        std::string("--op tcm_bw --shape kib=64,source_mib=4 --params workers=2,mode=") + mode +
        ",tcm_backend=emulated --reps 2 --min-time 0.001 --json");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const json j = json::parse(r.out);
    EXPECT_TRUE(j["accuracy"]["pass"].get<bool>());
    EXPECT_EQ(j["params"]["tcm"]["backend"], "emulated");
    EXPECT_EQ(j["traffic"]["activation_bytes"].get<std::int64_t>(), 2 * 64 * 1024);
    EXPECT_EQ(j["params"]["placement"]["workers"].size(), 2u);
  }
  // A transfer larger than a TCM block is an unsupported shape (exit 3), with the reason.
  const auto big = run_k3bench("--op tcm_bw --shape kib=512 --params tcm_backend=emulated --json");
  EXPECT_EQ(big.exit_code, 3);
  EXPECT_NE(big.err.find("exceeds the TCM block"), std::string::npos) << big.err;
}

TEST(K3benchTcm, DecodeReportsGateAndCopyComputeTimes) {
  // tcm=on runs the pipeline on emulated TCM; auto declines emulated blocks and says so.
  const auto on = run_k3bench(
      "--op linear_decode --shape n=256,k=2048 --params workers=2,tcm=on,tcm_workers=2,"
      "slab_rows=32,tcm_backend=emulated,copies=1 --reps 2 --min-time 0.001 --json");
  ASSERT_EQ(on.exit_code, 0) << on.err;
  const json j = json::parse(on.out);
  EXPECT_TRUE(j["accuracy"]["pass"].get<bool>());
  const json& tcm = j["params"]["tcm"];
  EXPECT_EQ(tcm["backend"], "emulated");
  EXPECT_TRUE(tcm["gate"]["use_tcm"].get<bool>()) << tcm.dump();
  EXPECT_EQ(tcm["gate"]["slab_rows"], 32);
  EXPECT_GT(tcm["per_call"]["copy_seconds"].get<double>(), 0.0);
  EXPECT_GT(tcm["per_call"]["compute_seconds"].get<double>(), 0.0);
  // every packed weight byte (256 rows x 2048: codes + an fp16 (beta, scale) pair per 64-block)
  // copied once per call
  EXPECT_DOUBLE_EQ(tcm["per_call"]["bytes_copied"].get<double>(),
                   256.0 * 2048 / 2 + 256.0 * 32 * 4);

  const auto autogate = run_k3bench(
      "--op linear_decode --shape n=2048,k=2048 --params workers=2,tcm=auto,"
      "tcm_backend=emulated,copies=1 --reps 1 --min-time 0.001 --json");
  ASSERT_EQ(autogate.exit_code, 0) << autogate.err;
  const json a = json::parse(autogate.out);
  EXPECT_FALSE(a["params"]["tcm"]["gate"]["use_tcm"].get<bool>());
  EXPECT_NE(a["params"]["tcm"]["gate"]["reason"].get<std::string>().find("emulated"),
            std::string::npos);

  const auto bad =
      run_k3bench("--op linear_decode --shape n=64,k=2048 --params slab_rows=48 --json");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("slab_rows=48"), std::string::npos) << bad.err;
}

TEST(K3benchTcm, StaleLockIsReportedAndRecoveredOnlyOnRequest) {
  const std::string state = (std::filesystem::temp_directory_path() /
                             ("k3bench-tcm-" + std::to_string(::getpid()) + ".state"))
                                .string();
  std::filesystem::remove(state);
  const std::string env =
      "K3_TCM_LIBRARY=" + std::string(K3_FAKE_SPINE_TCM) + " FAKE_SPINE_TCM_STATE=" + state;
  // A child process takes block 4 through the vendor API and dies without releasing it.
  const pid_t child = k3test::leave_stale_tcm_lock(K3_FAKE_SPINE_TCM, state, 4);
  ASSERT_GT(child, 0);

  auto status_json = [&] {
    const auto r = run_k3bench("--tcm-status --json", env);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return json::parse(r.out);
  };
  json s = status_json();
  EXPECT_EQ(s["backend"], "real");
  EXPECT_EQ(s["stale_blocks"], json::array({4}));
  EXPECT_EQ(s["blocks"][4]["owner_tid"], child);
  // Status is a report: running it again changes nothing.
  EXPECT_EQ(status_json()["stale_blocks"], json::array({4}));
  // Recovery is the explicit command.
  const auto rel = run_k3bench("--tcm-force-release all --json", env);
  ASSERT_EQ(rel.exit_code, 0) << rel.err;
  EXPECT_EQ(json::parse(rel.out)["results"][0]["action"], "released");
  s = status_json();
  EXPECT_TRUE(s["stale_blocks"].empty());
  EXPECT_FALSE(s["blocks"][4]["acquired"].get<bool>());
  std::filesystem::remove(state);
}

}  // namespace
