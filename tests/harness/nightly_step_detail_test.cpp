// What the nightly keeps of a step's JSON output (apps/nightly/step_detail.h): the fields later
// steps read, only from output that follows its form's schema; output that does not is refused
// with the field named, and nothing is taken from it.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "apps/nightly/step_detail.h"
#include "tests/support/scratch_dir.h"

namespace {

namespace fs = std::filesystem;
using k3bench::ChildOutput;
using nlohmann::json;

class NightlyStepDetail : public ::testing::Test {
 protected:
  // The detail of `text` printed by a step of form `kind`; its problems in problems_.
  json detail(ChildOutput kind, const std::string& text) {
    const std::string path = (dir_ / "step.json").string();
    std::ofstream(path) << text;
    problems_.clear();
    return k3nightly::step_detail(K3TUNE_ROOT, kind, path, problems_);
  }
  k3test::ScratchDir dir_{"k3-step-detail-", k3test::ScratchDir::Name::kPerProcess};
  std::vector<std::string> problems_;
};

const json kFarmBench = {{"schema", "k3tune.bench/1"},
                         {"sweep_uuid", "s1"},
                         {"runs", {{{"board", "b1"}, {"run_uuid", "r1"}}}},
                         {"quarantined", json::object()},
                         {"cells", {{{"status", "measured"}}}},
                         {"measured_cells", 1},
                         {"failed_cells", 0},
                         {"samples_before", 2},
                         {"samples_after", 6},
                         {"wall_s", 1.5}};

TEST_F(NightlyStepDetail, KeepsTheFieldsLaterStepsReadFromOutputThatFollowsItsForm) {
  const json d = detail(ChildOutput::kBench, kFarmBench.dump());
  EXPECT_EQ(problems_, std::vector<std::string>{});
  EXPECT_EQ(d.at("sweep_uuid"), "s1");
  EXPECT_EQ(d.at("runs"), kFarmBench.at("runs"));
  EXPECT_EQ(d.at("samples_after"), 6);
  EXPECT_FALSE(d.contains("wall_s"));  // not something a later step reads
  const json count = json::array({{{"path", "rvv"},
                                   {"op", "linear_decode"},
                                   {"shape", "n=64,k=64"},
                                   {"vlen", 256},
                                   {"instructions_per_call", 1234.0},
                                   {"jitter", 0.0},
                                   {"run_uuid", "c1"}}});
  const json c = detail(ChildOutput::kCount, count.dump());
  EXPECT_EQ(problems_, std::vector<std::string>{});
  ASSERT_EQ(c.at("counts").size(), 1u);
  EXPECT_EQ(c["counts"][0]["run_uuid"], "c1");
}

TEST_F(NightlyStepDetail, OutputThatDoesNotFollowItsFormGivesNothingAndSaysWhy) {
  json retyped = kFarmBench;
  retyped["samples_after"] = "6";
  EXPECT_EQ(detail(ChildOutput::kBench, retyped.dump()), json::object());
  ASSERT_FALSE(problems_.empty());
  EXPECT_NE(problems_.front().find("samples_after"), std::string::npos) << problems_.front();

  EXPECT_EQ(detail(ChildOutput::kBench, "{\"cells\": ["), json::object());
  EXPECT_EQ(problems_, std::vector<std::string>{"not JSON"});

  // A step that printed nothing (it failed before its result): no detail, and nothing to refuse;
  // its exit code tells the nightly why.
  EXPECT_EQ(detail(ChildOutput::kBench, "\n"), json::object());
  EXPECT_EQ(problems_, std::vector<std::string>{});
}

}  // namespace
