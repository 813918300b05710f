// The fixture of the `k3tune tune` end-to-end tests: each test gets its own directory with a
// targets file (the host runner, and build/rvv's runner under qemu-user) and a results database,
// and runs the real k3tune binary in it.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/host/store/database.h"
#include "harness/host/targets/process.h"
#include "tests/support/scratch_dir.h"

namespace fs = std::filesystem;

// A named namespace: the two test files must share one fixture class (googletest refuses a suite
// whose tests use two classes of one name).
namespace k3test {

struct Cmd {
  int code;
  std::string out, err;
};

class TuneCli : public ::testing::Test {
 protected:
  void SetUp() override {
    fs::create_directories(dir_ / "spaces");
    std::ofstream(dir_ / "targets.toml")
        << "[targets.local]\nkind = \"local\"\nrunner = \"" + std::string(K3BENCH_PATH) +
               "\"\ntimeout_s = 120\n"
        << "[targets.qemu]\nkind = \"qemu\"\nvlen = 256\nrunner = \"" << rvv_runner()
        << "\"\ntimeout_s = 600\n";
  }
  static std::string rvv_runner() {
    return std::string(K3TUNE_ROOT) + "/build/rvv/harness/runner/k3bench";
  }
  std::string db() const { return (dir_ / "results.db").string(); }
  std::string spaces() const { return (dir_ / "spaces").string(); }
  void write_space(const std::string& text, const std::string& op = "linear_decode") const {
    std::ofstream(dir_ / "spaces" / (op + ".toml")) << text;
  }

  Cmd k3tune(std::vector<std::string> args) const {
    std::vector<std::string> argv = {K3TUNE_PATH,
                                     "--root",
                                     K3TUNE_ROOT,
                                     "--db",
                                     db(),
                                     "--targets",
                                     (dir_ / "targets.toml").string(),
                                     "-q"};
    argv.insert(argv.end(), args.begin(), args.end());
    const auto r = k3targets::run_process(argv, k3targets::ProcessOptions::with_timeout(1800));
    return {r.signal ? 128 + r.signal : r.exit_code, r.out, r.err};
  }
  std::int64_t count(const std::string& sql) const {
    return k3store::open_database(db(), k3store::OpenMode::kReadOnly)->scalar_int(sql);
  }
  static nlohmann::json read_json(const fs::path& p) {
    std::ifstream f(p);
    return nlohmann::json::parse(f);
  }
  ScratchDir dir_{"k3tune_tune_"};
};

// The [space] table of a test's space file: `op`'s space, what the test tries (`description`),
// meaningful on targets of kind `meaningful_on`; its knobs follow.
inline std::string space_table(const std::string& op, const std::string& description,
                               const std::string& meaningful_on) {
  return "\n[space]\nop = \"" + op + "\"\ndescription = \"" + description +
         "\"\nmeaningful_on = [\"" + meaningful_on + "\"]\n";
}

// Two tile widths x two worker counts on the host.
inline const std::string kSmallSpace =
    space_table("linear_decode", "test: tile width and workers", "local") + R"([knobs.workers]
range = [1, "cpus"]
default = "cpus"
[knobs.tile_n]
values = [32, 64]
default = 64
[constraints]
rules = ["tile_n <= n"]
)";

}  // namespace k3test

using k3test::kSmallSpace;
using k3test::space_table;
using k3test::TuneCli;
