// The confirm step: a slowdown the cross-run test suspects is measured again, now, with the
// baseline build's kept runner and the candidate's interleaved (A B A B), and only the paired
// verdict of that re-measurement decides. Real runners throughout:
//   - two identical builds (two runners of the same code) with a slowdown planted in the stored
//     data: the re-measurement refutes it;
//   - a build that really is slower (twice the time per call), whose own binary is gone by then:
//     its kept copy is re-run and the slowdown confirmed;
//   - a runner neither kept nor on disk: no re-measurement, and the suspected slowdown counts.
// The runners are the real k3bench with planted times (tests/support/synthetic-k3bench.sh: the
// fixture's 100 us per call, +-0.5%), so the re-measurements' verdicts are exact: a test of the
// confirm step's plumbing, not of this machine's noise (the rules' statistics are tested on the
// in-process synthetic runner).
#include <gtest/gtest.h>

#include <fstream>

#include "report_test_support.h"
#include "tests/support/bench_config.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace k3test::reports {
namespace {

const std::string kDecode = measure_table(5, 3, "0.01") + decode_case("[{ n = 256, k = 512 }]");

const json kShape = {{"k", 512}, {"n", 256}};

class ReportConfirm : public ReportTest {
 protected:
  json decode_verdict(const fs::path& out) const {
    const json doc = json::parse(read(out / "report.json"));
    EXPECT_EQ(doc["verdict"]["cells"].size(), 1u);
    return doc["verdict"]["cells"][0];
  }
  std::string rules() const {
    const fs::path p = dir_ / "rules.toml";
    std::ofstream(p) << "[timing.ops]\nlinear_decode = 0.25\n";
    return p.string();
  }
};

TEST_F(ReportConfirm, PlantedSlowdownBetweenIdenticalBuildsIsRefuted) {
  const std::string base = bench(kDecode);
  use_runner(copy_of_runner("k3bench-same-code"));
  const std::string cand = bench(kDecode);
  plant_samples(base, cell_of(base, "linear_decode", kShape), cand,
                cell_of(cand, "linear_decode", kShape), [](int p) {
                  return std::pair{p, 2.0};
                });
  // Without --confirm the planted slowdown stands as suspected and counts.
  auto r = k3tune({"report", cand, "--baseline", base, "--rules", rules(), "--no-html", "-o",
                   (dir_ / "a").string()});
  EXPECT_EQ(r.code, 4) << r.err;
  EXPECT_EQ(decode_verdict(dir_ / "a")["timing"]["confirmation"], "not-asked");

  const fs::path out = dir_ / "b";
  r = k3tune({"report", cand, "--baseline", base, "--rules", rules(), "--confirm", "--no-html",
              "-o", out.string()});
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  const json v = decode_verdict(out);
  EXPECT_EQ(v["timing"]["outcome"], "regression");  // what the cross-run test said
  EXPECT_EQ(v["timing"]["confirmation"], "refuted");
  EXPECT_FALSE(v["regression"].get<bool>());
  EXPECT_LT(std::abs(v["timing"]["confirm_test"]["rel_diff"].get<double>()), 0.25);
  const std::string confirm_run = v["timing"]["confirm_run"];
  ASSERT_FALSE(confirm_run.empty());
  const std::string md = read(out / "summary.md");
  EXPECT_NE(md.find("## Verdict: clean, no regression"), std::string::npos) << md;
  EXPECT_NE(md.find("0 unchanged, 1 refuted"), std::string::npos) << md;
  for (const auto& line : lines_of(md)) EXPECT_LE(line.size(), 100u) << line;
  EXPECT_NE(md.find("interleaved: unchanged within"), std::string::npos) << md;

  // The re-measurement is a run of its own: both builds, in the same rounds, A B A B.
  auto c = open();
  EXPECT_EQ(c->scalar_int(
                "SELECT count(DISTINCT c.build_hash) FROM processes p JOIN cells c USING (cell_key)"
                " WHERE p.run_uuid = '" +
                confirm_run + "'"),
            2);
  EXPECT_EQ(
      c->scalar_int("SELECT count(*) FROM processes p JOIN cells c USING (cell_key) JOIN runs r"
                    " ON r.run_uuid = '" +
                    base + "' WHERE p.run_uuid = '" + confirm_run +
                    "' AND (p.order_index % 2 = 0) <> (c.build_hash = r.build_hash)"),
      0)
      << "even positions run the baseline build, odd ones the candidate";
  EXPECT_GE(c->scalar_int("SELECT count(*) FROM processes WHERE run_uuid = '" + confirm_run + "'"),
            10);
  // Both runners are kept by hash next to the database.
  EXPECT_EQ(c->scalar_int("SELECT count(*) FROM builds"), 2);
  auto hashes = c->prepare("SELECT build_hash FROM builds");
  while (hashes.step())
    EXPECT_TRUE(fs::exists(dir_ / "runners" / hashes.text(0))) << hashes.text(0);
}

TEST_F(ReportConfirm, ASlowdownBetweenRunsOfTheSameBuildIsTheMachines) {
  const std::string base = bench(kDecode);
  const std::string cand = bench(kDecode);  // the same runner: the same build hash
  plant_samples(base, cell_of(base, "linear_decode", kShape), cand,
                cell_of(cand, "linear_decode", kShape), [](int p) {
                  return std::pair{p, 2.0};
                });
  const fs::path out = dir_ / "out";
  const auto r =
      k3tune({"report", cand, "--baseline", base, "--confirm", "--no-html", "-o", out.string()});
  EXPECT_EQ(r.code, 0) << r.err;
  const json v = decode_verdict(out);
  EXPECT_EQ(v["timing"]["outcome"], "regression");
  EXPECT_EQ(v["timing"]["confirmation"], "refuted");
  EXPECT_FALSE(v["regression"].get<bool>());
  EXPECT_NE(v["timing"]["confirm_note"].get<std::string>().find("the code did not change"),
            std::string::npos);
  EXPECT_FALSE(v["timing"].contains("confirm_test"));
  EXPECT_EQ(open()->scalar_int("SELECT count(*) FROM runs"), 2) << "nothing was re-measured";
}

TEST_F(ReportConfirm, RealSlowdownIsConfirmedFromTheKeptRunner) {
  const std::string base = bench(kDecode);
  const std::string slower = slower_runner("k3bench-slower", 2.0);
  use_runner(slower);
  const std::string cand = bench(kDecode);
  // Reporting the candidate keeps its runner; then its binary goes away (a rebuilt tree).
  auto r = k3tune({"report", cand, "--no-html", "-o", (dir_ / "first").string()});
  ASSERT_EQ(r.code, 0) << r.err;
  fs::remove(slower);
  const fs::path out = dir_ / "out";
  r = k3tune({"report", cand, "--baseline", base, "--confirm", "--no-html", "-o", out.string()});
  EXPECT_EQ(r.code, 4) << r.out << r.err;
  const json v = decode_verdict(out);
  EXPECT_EQ(v["timing"]["outcome"], "regression");
  EXPECT_EQ(v["timing"]["confirmation"], "confirmed");
  EXPECT_TRUE(v["regression"].get<bool>());
  EXPECT_GT(v["timing"]["confirm_test"]["rel_diff"].get<double>(), 0.5);
  EXPECT_LT(v["timing"]["confirm_test"]["p_value"].get<double>(), 0.05);
  EXPECT_LT(v["timing"]["speedup"]["value"].get<double>(), 0.7);
  const std::string slower_section = section(read(out / "summary.md"), "### Slower");
  EXPECT_NE(slower_section.find("CONFIRMED +"), std::string::npos) << slower_section;
}

TEST_F(ReportConfirm, WithoutAKeptRunnerTheSuspectedSlowdownCounts) {
  const std::string base = bench(kDecode);
  const std::string gone = copy_of_runner("k3bench-gone");
  use_runner(gone);
  const std::string cand = bench(kDecode);
  plant_samples(base, cell_of(base, "linear_decode", kShape), cand,
                cell_of(cand, "linear_decode", kShape), [](int p) {
                  return std::pair{p, 2.0};
                });
  fs::remove(gone);
  const fs::path out = dir_ / "out";
  const auto r =
      k3tune({"report", cand, "--baseline", base, "--confirm", "--no-html", "-o", out.string()});
  EXPECT_EQ(r.code, 4) << r.err;
  const json v = decode_verdict(out);
  EXPECT_EQ(v["timing"]["confirmation"], "unavailable");
  EXPECT_NE(v["timing"]["confirm_note"].get<std::string>().find("was not kept"), std::string::npos)
      << v["timing"]["confirm_note"];
  EXPECT_TRUE(v["regression"].get<bool>());
}

}  // namespace
}  // namespace k3test::reports
