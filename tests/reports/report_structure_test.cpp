// summary.md and report.json of `k3tune report` from a fixture database built from real runner
// output: a baseline run and a candidate run of the real k3bench (a copy with another build hash),
// with changes planted into the candidate's stored data where the truth must be known:
//   linear_decode   PLANTED REGRESSION: the baseline's own samples, 4x as slow      -> flagged
//   rmsnorm         PLANTED NOISE: the baseline's samples, processes reversed, each -> unchanged
//                   moved by at most 1.5% (zero on average)
//   linear_prefill  the worst error/bound ratio raised by 0.5 (allowed: 0.25)       -> accuracy
//   flag quant_pack_decode  the output checksum changed (outputs must be identical)      -> output
//   flag linear_decode k=100  fails for real in the candidate (k not a multiple of 64)   -> failed
//   cell
// Timing of the other cells is the baseline's exactly, so every verdict is deterministic.
#include <gtest/gtest.h>

#include <fstream>

#include "report_test_support.h"
#include "tests/support/bench_config.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace k3test::reports {
namespace {

const std::string kCases = measure_table(6, 3, "0.002") + decode_case("[{ n = 256, k = 512 }]") +
                           R"toml([[case]]
op = "rmsnorm"
shapes = [{ rows = 4, dim = 1024 }]
params = { workers = 1 }
[[case]]
op = "linear_prefill"
shapes = [{ m = 4, n = 128, k = 256 }]
params = { workers = 1 }
[[case]]
op = "quant_pack_decode"
shapes = [{ k = 1024 }]
)toml";

const char* const kFailing = R"toml(
[[case]]
op = "linear_decode"
shapes = [{ n = 64, k = 100 }]
params = { workers = 1, copies = 1 }
)toml";

class ReportStructure : public ReportTest {
 protected:
  void SetUp() override {
    ReportTest::SetUp();
    base_ = bench(kCases);
    use_runner(copy_of_runner("k3bench-candidate"));
    cand_ = bench(kCases + kFailing);
    const json decode = {{"k", 512}, {"n", 256}}, norm = {{"dim", 1024}, {"rows", 4}};
    const json prefill = {{"k", 256}, {"m", 4}, {"n", 128}}, quant = {{"k", 1024}};
    // Timing: every candidate cell from the baseline's own samples (exact), two of them changed.
    const double noise[6] = {1.015, 0.985, 1.01, 0.99, 1.005, 0.995};
    // Four times slower, over the baseline's own process-to-process spread (the fixture's runners
    // plant their times: +-0.5%, whatever the machine does; report_test_support.h).
    plant_samples(base_, cell_of(base_, "linear_decode", decode), cand_,
                  cell_of(cand_, "linear_decode", decode), [](int p) {
                    return std::pair{p, 4.0};
                  });
    plant_samples(base_, cell_of(base_, "rmsnorm", norm), cand_, cell_of(cand_, "rmsnorm", norm),
                  [&](int p) {
                    return std::pair{5 - p, noise[p]};
                  });
    for (const auto& [op, shape] :
         {std::pair{"linear_prefill", prefill}, std::pair{"quant_pack_decode", quant}})
      plant_samples(base_, cell_of(base_, op, shape), cand_, cell_of(cand_, op, shape), [](int p) {
        return std::pair{p, 1.0};
      });
    plant_accuracy(cand_, cell_of(cand_, "linear_prefill", prefill),
                   "$.accuracy.worst_error_to_bound",
                   "json_extract(runner_json, '$.accuracy.worst_error_to_bound') + 0.5");
    plant_accuracy(cand_, cell_of(cand_, "quant_pack_decode", quant),
                   "$.accuracy.output_checksum.fnv1a64", "'0123456789abcdef'");
  }

  // The cell verdict of an op in report.json / compare --json.
  static json cell(const json& verdict, const std::string& label_prefix) {
    for (const auto& c : verdict["cells"])
      if (c["label"].get<std::string>().rfind(label_prefix, 0) == 0) return c;
    ADD_FAILURE() << "no verdict for " << label_prefix;
    return json::object();
  }

  std::string base_, cand_;
};

TEST_F(ReportStructure, PlantedRegressionIsFlaggedAndPlantedNoiseIsNot) {
  const fs::path out = dir_ / "out";
  const auto r = k3tune({"report", cand_, "--baseline", base_, "--no-html", "-o", out.string()});
  EXPECT_EQ(r.code, 4) << r.err;  // regressions in the verdict
  const json doc = json::parse(read(out / "report.json"));
  const json& v = doc["verdict"];
  ASSERT_TRUE(v.is_object());
  EXPECT_EQ(v["method"], "welch-across-runs");
  EXPECT_EQ(v["baseline_run"], base_);
  EXPECT_EQ(v["candidate_run"], cand_);

  const json decode = cell(v, "linear_decode k=512,n=256");
  EXPECT_EQ(decode["timing"]["outcome"], "regression");
  EXPECT_TRUE(decode["regression"].get<bool>());
  EXPECT_NEAR(decode["timing"]["test"]["rel_diff"].get<double>(), 3.0, 1e-9);  // exactly 4x
  EXPECT_LT(decode["timing"]["test"]["p_value"].get<double>(), 0.05);
  EXPECT_EQ(decode["timing"]["confirmation"], "not-asked");
  EXPECT_NEAR(decode["timing"]["speedup"]["value"].get<double>(), 0.25, 1e-9);

  const json norm = cell(v, "rmsnorm dim=1024,rows=4");
  EXPECT_EQ(norm["timing"]["outcome"], "unchanged");
  EXPECT_FALSE(norm["regression"].get<bool>());
  EXPECT_LT(std::abs(norm["timing"]["test"]["rel_diff"].get<double>()), 0.015);
  // "Unchanged" says what the data could have seen: at least the threshold (2% for rmsnorm).
  EXPECT_GE(norm["timing"]["test"]["minimum_detectable_effect"].get<double>(), 0.0);
  EXPECT_EQ(norm["timing"]["threshold"].get<double>(), 0.02);

  const json prefill = cell(v, "linear_prefill k=256,m=4,n=128");
  EXPECT_EQ(prefill["timing"]["outcome"], "unchanged");
  EXPECT_TRUE(prefill["accuracy"]["ratio_flagged"].get<bool>());
  EXPECT_NEAR(prefill["accuracy"]["error_to_bound"][1].get<double>() -
                  prefill["accuracy"]["error_to_bound"][0].get<double>(),
              0.5, 1e-12);
  EXPECT_TRUE(prefill["regression"].get<bool>());

  const json quant = cell(v, "quant_pack_decode k=1024");
  EXPECT_TRUE(quant["accuracy"]["checksum_required"].get<bool>());
  EXPECT_TRUE(quant["accuracy"]["checksum_flagged"].get<bool>());
  EXPECT_EQ(quant["accuracy"]["checksum"][1], "0123456789abcdef");
  // Unplanted outputs are bit-identical between the two builds (the same code): not flagged.
  EXPECT_TRUE(decode["accuracy"]["checksum_required"].get<bool>());
  EXPECT_FALSE(decode["accuracy"]["checksum_flagged"].get<bool>());
  EXPECT_EQ(decode["accuracy"]["checksum"][0].get<std::string>().size(), 16u);

  ASSERT_EQ(v["failed"].size(), 1u);
  EXPECT_EQ(v["failed"][0]["side"], "candidate");
  EXPECT_NE(v["failed"][0]["reason"].get<std::string>().find("multiple of 64"), std::string::npos)
      << v["failed"][0]["reason"];
  EXPECT_EQ(v["counts"]["regressions"], 3);
  EXPECT_EQ(v["counts"]["accuracy_regressions"], 2);
  EXPECT_EQ(doc["exit_code"], 4);

  // The rest of report.json: the runs with their builds and cells, trends, roofline, tuning note.
  EXPECT_EQ(doc["run"]["cells"].size(), 5u);
  EXPECT_EQ(doc["baseline"]["cells"].size(), 4u);
  EXPECT_NE(doc["run"]["build_hash"], doc["baseline"]["build_hash"]);
  EXPECT_EQ(doc["trends"]["runs"].size(), 2u);
  EXPECT_FALSE(doc["tuning"]["available"].get<bool>());
  EXPECT_NE(doc["tuning"]["note"].get<std::string>().find("no tuning tables"), std::string::npos);
  EXPECT_FALSE(doc["roofline"]["points"].empty());
  for (const auto& c : doc["run"]["cells"]) {
    if (c["status"] != "ok") continue;
    EXPECT_TRUE(c["mean_ns"].is_number()) << c["label"];
    EXPECT_EQ(c["process_means_ns"].size(), 6u) << c["label"];
  }

  // summary.md: the verdict first, readable at 100 columns.
  const std::string md = read(out / "summary.md");
  for (const auto& line : lines_of(md)) EXPECT_LE(line.size(), 100u) << line;
  const auto verdict_at = md.find("## Verdict: 3 REGRESSIONS (1 slower, 2 accuracy)");
  ASSERT_NE(verdict_at, std::string::npos) << md;
  EXPECT_LT(verdict_at, md.find("## Figures per model and op"));
  const std::string slower = section(md, "### Slower");
  EXPECT_NE(slower.find("linear_decode k=512,n=256"), std::string::npos) << slower;
  EXPECT_NE(slower.find("+300.0%"), std::string::npos) << slower;
  EXPECT_NE(slower.find("| unconfirmed"), std::string::npos) << slower;
  EXPECT_EQ(slower.find("rmsnorm"), std::string::npos) << slower;
  const std::string unchanged = section(md, "### Unchanged");
  EXPECT_NE(unchanged.find("rmsnorm dim=1024,rows=4"), std::string::npos) << unchanged;
  EXPECT_NE(unchanged.find("+-"), std::string::npos) << unchanged;
  const std::string accuracy = section(md, "### Accuracy");
  EXPECT_NE(accuracy.find("- ACCURACY linear_prefill"), std::string::npos) << accuracy;
  EXPECT_NE(accuracy.find("- OUTPUT CHANGED quant_pack_decode"), std::string::npos) << accuracy;
  const std::string failed = section(md, "### Failed cells");
  EXPECT_NE(failed.find("linear_decode k=100,n=64"), std::string::npos) << failed;
  EXPECT_NE(failed.find("multiple of 64"), std::string::npos) << failed;
  EXPECT_EQ(section(md, "### Faster"), "");
  // Per model and op, the key figures with their intervals.
  const std::string figures = section(md, "## Figures per model and op");
  EXPECT_NE(figures.find("95% CI us |"), std::string::npos) << figures;
  EXPECT_NE(figures.find("### rmsnorm"), std::string::npos) << figures;
  // A group's layer is named once in its heading (the failed cell ran none), so labels stay whole.
  EXPECT_NE(figures.find("### linear_decode (generic)"), std::string::npos) << figures;
  EXPECT_NE(figures.find("| k=512,n=256 "), std::string::npos) << figures;  // the op is the heading
  EXPECT_NE(md.find("## Provenance"), std::string::npos);
}

TEST_F(ReportStructure, ComparePrintsTheReportsVerdict) {
  const fs::path out = dir_ / "out";
  const auto report =
      k3tune({"report", cand_, "--baseline", base_, "--no-html", "-o", out.string()});
  ASSERT_EQ(report.code, 4) << report.err;
  const auto compare = k3tune({"compare", base_, cand_});
  EXPECT_EQ(compare.code, 4) << compare.err;
  const std::string md = read(out / "summary.md");
  const std::string verdict = section(md, "## Verdict");
  ASSERT_FALSE(verdict.empty());
  EXPECT_EQ(compare.out, verdict);
  const auto as_json = k3tune({"--json", "compare", base_, cand_});
  EXPECT_EQ(json::parse(as_json.out), json::parse(read(out / "report.json"))["verdict"]);
}

TEST_F(ReportStructure, ExitCodesCleanFailedCellsAndNoReport) {
  const fs::path out = dir_ / "out";
  auto r = k3tune({"report", base_, "--no-html", "-o", out.string()});
  EXPECT_EQ(r.code, 0) << r.err;  // no baseline, no failed cell
  EXPECT_NE(read(out / "summary.md").find("## Verdict: none"), std::string::npos);
  r = k3tune({"report", cand_, "--no-html", "-o", (dir_ / "c").string()});
  EXPECT_EQ(r.code, 3) << r.err;  // no baseline, one failed cell
  EXPECT_NE(read(dir_ / "c" / "summary.md").find("- FAILED linear_decode k=100,n=64"),
            std::string::npos);

  // No report: an unknown run, a bad rules file (file:line: key), a missing chart library.
  const fs::path none = dir_ / "none";
  r = k3tune({"report", "ffffffff", "-o", none.string()});
  EXPECT_EQ(r.code, 5);
  EXPECT_NE(r.err.find("run 'ffffffff' matches 0 runs"), std::string::npos) << r.err;
  const fs::path rules = dir_ / "rules.toml";
  std::ofstream(rules) << "[timing]\nmin_effect = 0.02\n\n[timing.ops]\nlinear_decode = \"big\"\n";
  r = k3tune(
      {"report", cand_, "--baseline", base_, "--rules", rules.string(), "-o", none.string()});
  EXPECT_EQ(r.code, 5);
  EXPECT_NE(r.err.find(rules.string() + ":5: timing.ops.linear_decode: expected a number"),
            std::string::npos)
      << r.err;
  r = k3tune({"report", cand_, "--baseline", cand_.substr(0, 8), "-o", none.string()});
  EXPECT_EQ(r.code, 5);
  EXPECT_NE(r.err.find("names the reported run itself"), std::string::npos) << r.err;
  r = k3tune({"report", cand_, "--js", (dir_ / "no-js").string(), "-o", none.string()});
  EXPECT_EQ(r.code, 5);
  EXPECT_NE(r.err.find("vega.min.js: missing"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(none)) << "nothing is written when no report can be produced";
  // The same from compare.
  r = k3tune({"compare", base_, "ffffffff"});
  EXPECT_EQ(r.code, 5);
}

}  // namespace
}  // namespace k3test::reports
