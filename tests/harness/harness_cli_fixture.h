// The fixture of the k3tune end-to-end tests: a scratch directory with its own database and
// targets file (a local target on this tree's k3bench, a qemu target on the rvv tree's), the real
// k3tune binary run as a child, and SQL counts on what it stored.
#pragma once

#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "harness/host/store/database.h"
#include "harness/host/targets/process.h"
#include "tests/support/scratch_dir.h"

namespace k3test {

namespace fs = std::filesystem;

struct Cmd {
  int code;
  std::string out, err;
};

class HarnessCli : public ::testing::Test {
 protected:
  void SetUp() override {
    std::ofstream(targets()) << "[targets.local]\nkind = \"local\"\nrunner = \"" +
                                    std::string(K3BENCH_PATH) + "\"\ntimeout_s = 120\n"
                             << "[targets.qemu]\nkind = \"qemu\"\nvlen = 256\nrunner = \""
                             << rvv_runner() << "\"\ntimeout_s = 600\n";
  }
  std::string db() const { return (dir_ / "results.db").string(); }
  std::string targets() const { return (dir_ / "targets.toml").string(); }
  static std::string rvv_runner() {
    return std::string(K3TUNE_ROOT) + "/build/k3tune-rvv/harness/runner/k3bench";
  }

  Cmd k3tune(std::vector<std::string> args, const std::vector<std::string>& env = {}) const {
    std::vector<std::string> argv = {"env"};
    argv.insert(argv.end(), env.begin(), env.end());
    argv.insert(argv.end(),
                {K3TUNE_PATH, "--root", K3TUNE_ROOT, "--db", db(), "--targets", targets()});
    argv.insert(argv.end(), args.begin(), args.end());
    const auto r = k3targets::run_process(argv, k3targets::ProcessOptions::with_timeout(900));
    return {r.signal ? 128 + r.signal : r.exit_code, r.out, r.err};
  }
  std::int64_t count(const std::string& sql) const {
    auto c = k3store::open_database(db(), k3store::OpenMode::kReadOnly);
    return c->scalar_int(sql);
  }
  // A tiny grid: 2 shapes x 2 tile sizes = 4 cells.
  static std::vector<std::string> tiny_grid() {
    return {"--op",       "linear_decode", "--shape",      "n=64,k=128", "--shape",
            "n=96,k=128", "--grid",        "tile_n=32,64", "--params",   "workers=1,copies=1",
            "--min-time", "0.002",         "--warmup",     "1",          "--no-remeasure"};
  }
  ScratchDir dir_{"k3tune_e2e_"};
};

// A second build for A/B tests: this tree's runner with bytes appended (another SHA-256, the same
// code) at `path`.
inline void copy_as_other_build(const fs::path& path) {
  fs::copy_file(K3BENCH_PATH, path);
  { std::ofstream(path, std::ios::app) << "baseline build"; }
  fs::permissions(path, fs::perms::owner_exec, fs::perm_options::add);
}

}  // namespace k3test
