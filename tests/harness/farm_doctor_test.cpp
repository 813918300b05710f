// The first-night check without sshd (label harness): the board-side script's output parsed from a
// worked text, and every check of a local board (this machine, the host k3bench) run for real --
// the same script, deploy and probe a K3 board gets over SSH.
#include <gtest/gtest.h>

#include "farm_test_support.h"
#include "harness/host/farm/board_check.h"
#include "harness/host/farm/board_doctor_facts.h"

namespace {

using namespace k3farm_test;

TEST(FarmDoctorFacts, ParsesTheScriptAndLaterLinesWin) {
  k3farm::DoctorFacts f;
  k3farm::parse_doctor_facts(
      "ai_thread absent\ncpus_online 0 1 2\npin 0 ok\n"
      "pin 9 fail taskset: failed to set pid 77's affinity: Invalid argument\n"
      "cpu_marchid 0 0x8000000058000002\ncpu_marchid 8 0x8000000041000002\n"
      "thermal_unreadable thermal_zone3\nthermal_zones 4\n"
      "disk_free_kib 2097152 /var/tmp\nperf_event_paranoid 4\nperf_user_access 1\n"
      // hooks appended: these replace what the script read
      "ai_thread writable\npin 0 fail nope\nend\n",
      f);
  EXPECT_EQ(f.ai_thread, "writable");
  EXPECT_EQ(f.cpus_online, (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(f.pin_errors,
            (std::map<int, std::string>{
                {0, "nope"}, {9, "taskset: failed to set pid 77's affinity: Invalid argument"}}));
  EXPECT_EQ(f.cpu_marchid,
            (std::map<int, std::string>{{0, "0x8000000058000002"}, {8, "0x8000000041000002"}}));
  EXPECT_EQ(f.thermal_unreadable, std::vector<std::string>{"thermal_zone3"});
  EXPECT_EQ(f.thermal_zones, 4);
  EXPECT_EQ(f.disk_free_kib, 2097152);
  EXPECT_EQ(f.disk_path, "/var/tmp");
  EXPECT_EQ(f.perf_event_paranoid, "4");
  EXPECT_EQ(f.perf_user_access, "1");
  EXPECT_TRUE(f.taskset);
  k3farm::parse_doctor_facts("taskset absent\n", f);
  EXPECT_FALSE(f.taskset);
}

TEST(FarmDoctorLocalBoard, EveryCheckRunsOnThisMachine) {
  TempDir tmp;
  const std::string path = tmp / "farm.toml";
  write_file(path, "[farm]\nname = \"here\"\n[defaults]\nkind = \"local\"\nrunner = \"" +
                       std::string(K3BENCH_PATH) + "\"\n[boards.l1]\nwork_dir = \"" +
                       (tmp / "l1/deeper") + "\"\ncpus = \"0\"\n");
  const auto farm = k3farm::load_farm(path);
  const auto rows = k3farm::check_board(farm, farm.boards.at(0), {K3TUNE_ROOT, 1});
  std::map<std::string, k3farm::CheckRow> by;
  std::vector<std::string> order;
  for (const auto& r : rows) {
    by[r.check] = r;
    order.push_back(r.check);
  }
  EXPECT_EQ(order, (std::vector<std::string>{"reachable", "host-key", "runner", "marchid", "vlenb",
                                             "tcm", "ai-thread", "pin", "cpufreq", "thermal",
                                             "disk", "perf", "pdu"}));
  EXPECT_EQ(by["reachable"].detail, "this machine answers");
  EXPECT_EQ(by["host-key"].status, k3farm::CheckStatus::kSkip);
  EXPECT_EQ(by["runner"].status, k3farm::CheckStatus::kOk) << by["runner"].detail;
  EXPECT_NE(by["runner"].detail.find(" copied (absent); runs: k3bench "), std::string::npos)
      << by["runner"].detail;
  EXPECT_EQ(by["pin"].status, k3farm::CheckStatus::kOk) << by["pin"].detail;
  EXPECT_EQ(by["pin"].detail, "CPUs 0 take an affinity");
  // The deploy made work_dir: df reads it (1 MiB needed, surely free).
  EXPECT_EQ(by["disk"].status, k3farm::CheckStatus::kOk) << by["disk"].detail;
  EXPECT_NE(by["disk"].detail.find(" MiB free in " + tmp / "l1/deeper" + " (a night needs 1 MiB)"),
            std::string::npos)
      << by["disk"].detail;
  EXPECT_TRUE(k3farm::night_ready(rows));
}

}  // namespace

namespace {

using namespace k3farm_test;

// A local board tagged k3 whose /proc/cpuinfo marchids and opt-in file come from its test hook.
std::map<std::string, k3farm::CheckRow> k3_local_board(const TempDir& tmp, const std::string& cpus,
                                                       const std::string& facts) {
  write_file(tmp / "farm.toml",
             "[farm]\nname = \"here\"\n[defaults]\nkind = \"local\"\nrunner = \"" +
                 std::string(K3BENCH_PATH) + "\"\n[boards.k]\nwork_dir = \"" + (tmp / "k") +
                 "\"\ntest_hooks = true\ntags = [\"k3\"]\n" + cpus);
  fs::create_directories(tmp / "k/test-hooks");
  write_file(tmp / "k/test-hooks/doctor_facts", facts);
  const auto farm = k3farm::load_farm(tmp / "farm.toml");
  std::map<std::string, k3farm::CheckRow> by;
  for (const auto& r : k3farm::check_board(farm, farm.boards.at(0), {K3TUNE_ROOT, 1}))
    by[r.check] = r;
  return by;
}

TEST(FarmDoctorLocalBoard, MarchidIsJudgedPerCpuOfTheBoard) {
  const std::string ids =
      "ai_thread writable\ncpu_marchid 0 0x8000000058000002\ncpu_marchid 1 0x8000000041000002\n";
  {
    TempDir tmp;
    auto by = k3_local_board(tmp, "cpus = \"1\"\n", ids);
    EXPECT_EQ(by["marchid"].status, k3farm::CheckStatus::kOk);
    EXPECT_EQ(by["marchid"].detail, "CPUs 1 are A100 (0x8000000041000002)");
    // The host runner has no RVV: a board tagged k3 needs vlenb 128.
    EXPECT_EQ(by["vlenb"].status, k3farm::CheckStatus::kFail);
    EXPECT_EQ(by["vlenb"].detail, "no RVV in the runner, not 128 (an A100's VLEN 1024)");
  }
  {
    TempDir tmp;
    auto by = k3_local_board(tmp, "", ids);
    EXPECT_EQ(by["marchid"].status, k3farm::CheckStatus::kOk);
    EXPECT_EQ(by["marchid"].detail,
              "A100 (0x8000000041000002) on CPUs 1; cpus unset: the runner pins there itself");
  }
  {
    TempDir tmp;
    auto by = k3_local_board(tmp, "", "cpu_marchid 0 0x8000000058000002\n");
    EXPECT_EQ(by["marchid"].status, k3farm::CheckStatus::kFail);
    EXPECT_EQ(by["marchid"].detail,
              "no CPU shows the A100's marchid 0x8000000041000002 (CPU 0 has 0x8000000058000002)");
    if (!fs::exists("/proc/set_ai_thread")) {  // not a K3 kernel: the real file is absent
      EXPECT_EQ(by["ai-thread"].status, k3farm::CheckStatus::kFail);
      EXPECT_EQ(by["ai-thread"].detail,
                "no /proc/set_ai_thread: threads cannot opt in to the A100 cores");
    }
  }
}

}  // namespace
