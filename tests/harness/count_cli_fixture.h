// The fixture of the k3tune count tests: a scratch folder with its results database, the riscv64
// runners and the counting plugin checked before each test, and k3tune run on that database.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "harness/host/targets/process.h"
#include "tests/support/scratch_dir.h"

class CountCliFixture : public ::testing::Test {
 protected:
  // `name`: the scratch folder's prefix; `timeout_s`: how long one k3tune call may take.
  CountCliFixture(const std::string& name, double timeout_s)
      : dir(name, k3test::ScratchDir::Name::kPerProcess), timeout_s_(timeout_s) {}
  void SetUp() override {
    for (const char* bin : {K3_COUNT_RVV_RUNNER, K3_COUNT_IME2_RUNNER, K3_COUNT_PLUGIN})
      ASSERT_TRUE(std::filesystem::exists(bin))
          << bin << " is missing (scripts/test.sh builds every tree first)";
  }
  std::string db() const { return (dir / "results.db").string(); }
  // One counted k3bench process: under `env` with `vars`, the RVV runner under qemu-user at VLEN
  // 256 with the counting plugin writing its lines to `out`, given `args`.
  static std::vector<std::string> counted_rvv_process(const std::vector<std::string>& vars,
                                                      const std::string& out,
                                                      const std::vector<std::string>& args) {
    std::vector<std::string> argv = {"env"};
    argv.insert(argv.end(), vars.begin(), vars.end());
    argv.insert(argv.end(),
                {"qemu-riscv64", "-cpu", "rv64,v=true,vlen=256,elen=64,vext_spec=v1.0", "-plugin",
                 std::string(K3_COUNT_PLUGIN) + ",outfile=" + out, K3_COUNT_RVV_RUNNER});
    argv.insert(argv.end(), args.begin(), args.end());
    return argv;
  }
  k3targets::ProcessResult k3tune(std::vector<std::string> args) const {
    std::vector<std::string> argv = {K3TUNE_PATH, "--root", K3TUNE_ROOT, "--db", db()};
    argv.insert(argv.end(), args.begin(), args.end());
    return k3targets::run_process(argv, k3targets::ProcessOptions::with_timeout(timeout_s_));
  }

  k3test::ScratchDir dir;

 private:
  double timeout_s_;
};
