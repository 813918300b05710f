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
  write_file(path, "[farm]\nname = \"here\"\n[defaults]\nkind = \"local\"\nrunner = \"" K3BENCH_PATH
                   "\"\n[boards.l1]\nwork_dir = \"" +
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
