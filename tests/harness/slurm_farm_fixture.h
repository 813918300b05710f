// The fixture of the Slurm farm tests (label slurm): each test starts its own cluster with
// tests/support/slurm-cluster.sh (Debian's munge, slurmctld and two slurmd, nodes b1 and b2, all on
// loopback as this user) and pairs each node with a loopback sshd board of the farm tests, whose
// runner is the dynamically linked riscv64 k3bench under qemu-user; it stops the cluster after.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "farm_test_support.h"
#include "harness/host/store/database.h"

// A named namespace: the test files share one fixture class (googletest refuses a suite whose
// tests use two classes of one name).
namespace k3slurm_test {

using namespace k3farm_test;
using Clock = std::chrono::steady_clock;

inline double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

class SlurmFarm : public LoopbackFarmTest {
 protected:
  void SetUp() override {
    LoopbackFarmTest::SetUp();
    if (HasFatalFailure()) return;
    slurm_dir_ = lab_->dir() / "slurm";
    const auto started = Clock::now();
    const auto r = k3targets::run_process(
        {"bash", std::string(K3TUNE_ROOT) + "/tests/support/slurm-cluster.sh", "start", slurm_dir_},
        k3targets::ProcessOptions::with_timeout(120));
    ASSERT_TRUE(r.ok()) << r.err << r.out;
    std::printf("Slurm cluster (munged, slurmctld, slurmd b1 b2) up in %.1f s\n",
                seconds_since(started));
    setenv("SLURM_CONF", (slurm_dir_ + "/slurm.conf").c_str(), 1);
    farm_file_ = slurm_farm();
  }
  void TearDown() override {
    if (!slurm_dir_.empty())
      k3targets::run_process({"bash", std::string(K3TUNE_ROOT) + "/tests/support/slurm-cluster.sh",
                              "stop", slurm_dir_},
                             k3targets::ProcessOptions::with_timeout(60));
    unsetenv("SLURM_CONF");
  }

  // The loopback farm with scheduler = "slurm" and `farm_extra` [farm] keys, `extra` TOML after.
  std::string slurm_farm(const std::string& farm_extra = "", const std::string& extra = "") const {
    return lab_->write_farm(
        K3_FARM_RISCV_RUNNER, extra,
        "scheduler = \"slurm\"\npartition = \"boards\"\ngres = \"k3:1\"\n" + farm_extra);
  }

  std::string slurm(const std::vector<std::string>& argv) const {
    const auto r = k3targets::run_process(argv, k3targets::ProcessOptions::with_timeout(30));
    return r.out + r.err;
  }
  std::string sinfo() const { return slurm({"sinfo", "-h", "-N", "-o", "%N %T %E"}); }
  std::string squeue() const { return slurm({"squeue", "-h", "-o", "%i %T %N"}); }
  // Jobs Slurm ever took (MinJobAge keeps finished ones listed by scontrol for 10 min).
  std::string jobs_known() const {
    const std::string all = slurm({"scontrol", "-o", "show", "jobs"});
    return all.find("No jobs") != std::string::npos ? "" : all;
  }

  Cmd bench(const std::vector<std::string>& extra, const std::string& db_path = "") const {
    auto args = tiny_farm_sweep_args(farm_file_, extra);
    args.insert(args.begin(), "-q");
    return run_k3tune(args, db_path);
  }
  std::future<Cmd> bench_async(const std::vector<std::string>& extra,
                               const std::string& db_path = "") const {
    return std::async(std::launch::async, [this, extra, db_path] { return bench(extra, db_path); });
  }

  static std::int64_t count(const std::string& db_path, const std::string& sql) {
    if (!fs::exists(db_path)) return 0;
    return k3store::open_database(db_path, k3store::OpenMode::kReadOnly)->scalar_int(sql);
  }
  // Sum of `sql` over the job databases written so far under <db>.slurm/.
  std::int64_t count_in_jobs(const std::string& sql) const {
    std::int64_t n = 0;
    if (!fs::exists(db() + ".slurm")) return 0;
    for (const auto& e : fs::recursive_directory_iterator(db() + ".slurm"))
      if (e.path().extension() == ".db") try {
          n += count(e.path().string(), sql);
        } catch (const std::exception&) {  // being created
        }
    return n;
  }
  static std::int64_t measured_on(const nlohmann::json& j, const std::string& board) {
    std::int64_t n = 0;
    for (const auto& c : j["cells"]) n += c["status"] == "measured" && c["board"] == board;
    return n;
  }

  std::string slurm_dir_;
};

inline const std::vector<std::string> kFourShapes = {"--shape", "n=64,k=256",  "--shape", "n=96,k=256",
                                              "--shape", "n=128,k=256", "--shape", "n=160,k=256"};

}  // namespace k3slurm_test
