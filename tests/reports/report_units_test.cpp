// The report's parts on their own: change points, text layout at 100 columns, the rules and board
// files (errors name file, line and key), speed-up intervals, and the tuning section from a
// database that has the tuner's tables as the contracts define them (and from one that has not).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "harness/host/store/database.h"
#include "harness/host/store/maintenance.h"
#include "harness/host/store/probes.h"
#include "harness/host/verdict/regression_config.h"
#include "harness/host/verdict/verdict.h"
#include "report_test_support.h"
#include "reports/boards.h"
#include "reports/change_points.h"
#include "reports/report_error.h"
#include "reports/text_table.h"
#include "reports/tuning.h"

namespace fs = std::filesystem;

namespace k3test::reports {
namespace {

TEST(ReportChangePoints, FindsStepsAndNothingInNoise) {
  // One step of +20% after four runs, with run-to-run noise of about 1%.
  const auto one =
      k3reports::find_change_points({10, 10.1, 9.9, 10, 12, 12.1, 11.9, 12}, 0.05, 0.02);
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(one[0].index, 4u);
  EXPECT_NEAR(one[0].rel_change, 0.2, 0.005);
  EXPECT_LT(one[0].p_value, 0.05);
  // Two steps, found by segmenting each side again.
  const auto two =
      k3reports::find_change_points({10, 10, 10, 10, 13, 13, 13, 13, 10, 10, 10, 10}, 0.05, 0.02);
  ASSERT_EQ(two.size(), 2u);
  EXPECT_EQ(two[0].index, 4u);
  EXPECT_EQ(two[1].index, 8u);
  // Noise alone (alternating +-3%), a step below the minimum effect, and too few runs: none.
  EXPECT_TRUE(
      k3reports::find_change_points({10, 10.3, 9.7, 10.3, 9.7, 10.3, 9.7, 10}, 0.05, 0.02).empty());
  EXPECT_TRUE(
      k3reports::find_change_points({10, 10, 10, 10, 10.1, 10.1, 10.1, 10.1}, 0.05, 0.02).empty());
  EXPECT_TRUE(k3reports::find_change_points({10, 20, 20}, 0.05, 0.02).empty());
}

TEST(ReportText, TablesFitTheWidthAndProseWraps) {
  k3reports::TextTable t({"cell", "mean us", "p"},
                         {k3reports::TextTable::Align::kLeft, k3reports::TextTable::Align::kRight,
                          k3reports::TextTable::Align::kRight});
  t.add({"head" + std::string(150, 'x') + "tail", "12.345", "0.01"});
  t.add({"short|with a bar", "1", "1"});
  const std::string md = t.markdown();
  for (const auto& line : lines_of(md)) EXPECT_EQ(line.size(), 100u) << line;
  EXPECT_NE(md.find("| headxxx"), std::string::npos) << md;  // both ends of the label are kept
  EXPECT_NE(md.find("xxx...xxx"), std::string::npos) << md;
  EXPECT_NE(md.find("xxxtail |"), std::string::npos) << md;
  EXPECT_NE(md.find("short/with a bar"), std::string::npos)
      << "a '|' would split the Markdown cell";
  EXPECT_NE(md.find("|------"), std::string::npos);
  EXPECT_NE(md.find("-:|"), std::string::npos) << "right-aligned columns say so";
  std::string words;
  for (int i = 0; i < 60; ++i) words += "word" + std::to_string(i) + " ";
  const std::string wrapped = k3reports::wrap(words, 100, "- ", "  ");
  for (const auto& line : lines_of(wrapped)) EXPECT_LE(line.size(), 100u) << line;
  EXPECT_EQ(wrapped.rfind("- word0 ", 0), 0u);
  EXPECT_EQ(lines_of(wrapped)[1].rfind("  word", 0), 0u);
}

class ReportFiles : public ::testing::Test {
 protected:
  std::string write(const std::string& name, const std::string& text) {
    std::ofstream((dir_ / name).string()) << text;
    return (dir_ / name).string();
  }
  std::string error_of(const std::function<void()>& f) {
    try {
      f();
    } catch (const k3reports::ReportError& e) {
      return e.what();
    }
    return "";
  }
  ScratchDir dir_{"k3reports_files_", ScratchDir::Name::kPerProcess};
};

TEST_F(ReportFiles, RegressionRulesWithErrorsNamingFileLineKey) {
  const auto rules =
      k3verdict::load_regression_config(std::string(K3TUNE_ROOT) + "/configs/regression.toml");
  EXPECT_EQ(rules.min_effect_for("linear_decode"), 0.03);
  EXPECT_EQ(rules.min_effect_for("rmsnorm"), rules.min_effect);
  EXPECT_TRUE(rules.identical_outputs.count("quant_pack_prefill"));
  EXPECT_GT(rules.max_ratio_increase, 0);
  const auto defaults = k3verdict::load_regression_config(write("empty.toml", ""));
  EXPECT_EQ(defaults.min_effect, 0.02);
  EXPECT_EQ(defaults.alpha, 0.05);
  EXPECT_EQ(rules.estimator, k3stats::PairedEstimator::kHodgesLehmann);
  EXPECT_EQ(
      k3verdict::load_regression_config(write("mean.toml", "[timing]\nestimator = \"mean\"\n"))
          .estimator,
      k3stats::PairedEstimator::kMeanT);
  struct Case {
    const char* text;
    const char* message;
  };
  for (const Case& c :
       {Case{"[timing]\nalpha = 0.9\n", ":2: timing.alpha: expected a value in"},
        Case{"[timing]\nmin_efect = 0.02\n", ":2: timing.min_efect: unknown key"},
        Case{"[timing]\nestimator = \"median\"\n",
             ":2: timing.estimator: unknown estimator 'median' (hodges-lehmann or mean)"},
        Case{"[accuracy]\nidentical_outputs = \"linear\"\n",
             ":2: accuracy.identical_outputs: expected a list"},
        Case{"[accuracy]\nidentical_outputs = [\"Linear Decode\"]\n",
             ":2: accuracy.identical_outputs: 'Linear Decode' is not an op name"},
        Case{"[confirm]\nprocesses = 8\nmax_processes = 4\n", "confirm.max_processes: 4 is below"},
        Case{"[reporting]\n", ":1: reporting: unknown table"}, Case{"[timing\n", ":1: "}}) {
    const std::string path = write("bad.toml", c.text);
    const std::string e = error_of([&] { k3verdict::load_regression_config(path); });
    EXPECT_NE(e.find(path), std::string::npos) << e;
    EXPECT_NE(e.find(c.message), std::string::npos) << e;
  }
  EXPECT_NE(error_of([&] {
              k3verdict::load_regression_config((dir_ / "absent.toml").string());
            }).find("no such file"),
            std::string::npos);
}

TEST_F(ReportFiles, BoardFilesMatchTheRunTheyDescribe) {
  const auto boards = k3reports::load_boards(std::string(K3TUNE_ROOT) + "/configs/boards");
  ASSERT_GE(boards.size(), 2u);
  k3verdict::RunData k3, qemu, host;
  k3.marchid = "0x8000000041000002";
  k3.arch = "riscv64";
  qemu.arch = "riscv64";  // qemu-user shows the host's CPU: no marchid
  qemu.cpu_model = "AMD EPYC";
  host.arch = "x86_64";
  host.cpu_model = "AMD EPYC";
  const auto* b = k3reports::board_for(boards, k3);
  ASSERT_NE(b, nullptr);
  EXPECT_NE(b->name.find("K3"), std::string::npos);
  for (const auto& c : b->ceilings) {
    EXPECT_FALSE(c.source.empty()) << c.name;
    EXPECT_GT(c.value, 0) << c.name;
  }
  EXPECT_EQ(k3reports::board_for(boards, qemu), nullptr);
  ASSERT_NE(k3reports::board_for(boards, host), nullptr);
  EXPECT_NE(k3reports::board_for(boards, host)->name.find("EPYC"), std::string::npos);

  fs::create_directories(dir_ / "boards");
  const std::string bad = (dir_ / "boards" / "b.toml").string();
  std::ofstream(bad)
      << "[board]\nname = \"x\"\n[[ceiling]]\nname = \"dram\"\nkind = \"bandwidth\"\nvalue = 10\n"
         "origin = \"published\"\n";
  EXPECT_NE(error_of([&] {
              k3reports::load_boards((dir_ / "boards").string());
            }).find(bad + ":3: ceiling[0].source: missing"),
            std::string::npos);
  std::ofstream(bad) << "[board]\nname = \"x\"\n[[ceiling]]\nname = \"dram\"\nkind = \"memory\"\n";
  EXPECT_NE(error_of([&] {
              k3reports::load_boards((dir_ / "boards").string());
            }).find(":5: ceiling[0].kind: expected"),
            std::string::npos);
}

TEST(ReportExactCounts, ADifferenceBeyondTwiceTheLargerJitterIsAChangeAnythingWithinIsIdentical) {
  using k3verdict::exact_count_verdict;
  using k3verdict::Outcome;
  // Within twice the larger of the two jitters: identical, whichever way.
  auto t = exact_count_verdict(100000, 150, 100250, 60);
  EXPECT_EQ(t.outcome, Outcome::kUnchanged);
  ASSERT_TRUE(t.exact);
  EXPECT_EQ(t.exact->tolerance, 300);
  EXPECT_EQ(t.exact->delta, 250);
  EXPECT_EQ(k3verdict::timing_text(t), "identical within +-300 insns");
  EXPECT_EQ(exact_count_verdict(100000, 60, 99700, 150).outcome, Outcome::kUnchanged);
  // At the tolerance exactly: still identical (a change is larger than it).
  EXPECT_EQ(exact_count_verdict(100000, 150, 100300, 0).outcome, Outcome::kUnchanged);
  // Beyond it: more instructions are a regression, fewer an improvement, with the exact delta.
  t = exact_count_verdict(100000, 150, 101234, 100);
  EXPECT_EQ(t.outcome, Outcome::kRegression);
  EXPECT_EQ(t.exact->delta, 1234);
  EXPECT_NEAR(t.cmp.rel_diff, 0.01234, 1e-12);
  EXPECT_EQ(k3verdict::timing_text(t), "MORE +1234 insns (+1.23%)");
  t = exact_count_verdict(100000, 150, 98000, 100);
  EXPECT_EQ(t.outcome, Outcome::kImprovement);
  EXPECT_EQ(k3verdict::timing_text(t), "fewer -2000 insns (-2.00%)");
  EXPECT_NEAR(t.speedup.value, 100000.0 / 98000.0, 1e-12);
  // Without a measured jitter (counts stored before it was measured), any difference counts.
  EXPECT_EQ(exact_count_verdict(100000, 0, 100001, 0).outcome, Outcome::kRegression);
  EXPECT_EQ(exact_count_verdict(100000, 0, 100000, 0).outcome, Outcome::kUnchanged);
}

TEST(ReportSpeedup, IntervalsOfPairedAndUnpairedData) {
  // Every round exactly twice as fast: the paired interval has no width.
  k3stats::CompareOptions mean_t;
  mean_t.estimator = k3stats::PairedEstimator::kMeanT;
  const auto paired = k3verdict::paired_speedup(
      k3stats::compare_paired_rounds({100, 110, 120, 130}, {50, 55, 60, 65}, mean_t));
  EXPECT_DOUBLE_EQ(paired.value, 2.0);
  EXPECT_DOUBLE_EQ(paired.low, 2.0);
  EXPECT_DOUBLE_EQ(paired.high, 2.0);
  // Welch: means 100 and 80 (speed-up 1.25), each sd 10 over 4 processes: the difference's
  // interval is 20 +- t(0.975, 6) * sqrt(50) = 20 +- 17.30, relative to the baseline mean.
  const auto w = k3verdict::welch_speedup({90, 100, 110, 100 + 0.0}, {70, 80, 90, 80});
  EXPECT_DOUBLE_EQ(w.value, 1.25);
  const double half = 2.446911851 * std::sqrt(200.0 / 3 / 4 * 2);
  EXPECT_NEAR(w.low, 1 / (1 + (-20 + half) / 100), 1e-6);
  EXPECT_NEAR(w.high, 1 / (1 + (-20 - half) / 100), 1e-6);
}

TEST_F(ReportFiles, TuningLandscapesAndTablesWhenTheTunersTablesExist) {
  const std::string path = (dir_ / "t.db").string();
  k3verdict::RunData run;
  run.target = "local";
  {
    auto c = k3store::open_database(path, k3store::OpenMode::kCreateOrUpdate);
    const auto absent = k3reports::load_tuning(*c, run, "2026-12-31T00:00:00Z");
    EXPECT_FALSE(absent.available);
    EXPECT_NE(absent.note.find("no tuning tables"), std::string::npos);
    create_tuning_tables(*c);
    add_tuning_session(*c, "s1", "2026-06-01T00:00:00Z", "local", "linear_decode");
    add_tuning_session(*c, "s-other", "2026-06-01T00:00:00Z", "qemu", "linear_decode");
    add_tuning_session(*c, "s-later", "2027-06-01T00:00:00Z", "local", "linear_decode");
    auto point = c->prepare(
        "INSERT INTO tuning_points(session_id, point_key, op, shape_json, config_json, status, "
        "reason,"
        " processes, mean_ns) VALUES ('s1', ?1, 'linear_decode', '{\"k\":2048,\"n\":2048}', ?2, "
        "?3, ?4, 3, ?5)");
    int key = 0;
    auto add = [&](int workers, int tile, int slab, const char* status, const char* reason,
                   double ns) {
      point.bind(1, "p" + std::to_string(key++));
      point.bind(
          2, nlohmann::json{{"workers", workers}, {"tile_n", tile}, {"slab_rows", slab}}.dump());
      point.bind(3, std::string(status)).bind(4, std::string(reason));
      if (ns > 0)
        point.bind(5, ns);
      else
        point.bind_null(5);
      point.run();
    };
    for (int w : {1, 2})
      for (int t : {32, 64, 128})
        add(w, t, 0, "measured", "", 1000.0 * t / (w * 32) + (t == 64 ? 0 : 500));
    add(2, 64, 64, "measured", "",
        900);  // the same (tile_n, workers) with another slab: the faster counts
    add(2, 256, 0, "rejected", "two slabs do not fit a 384 KiB TCM block", 0);
    // One table drawn from two sessions of this target: listed once.
    add_tuning_session(*c, "s2", "2026-06-01T00:30:00Z", "local", "rmsnorm");
    add_tuning_table(*c, "tab1", "2026-06-01T01:00:00Z", {"s1", "s2"},
                     decode_table_entry(900, 1.2));
  }
  auto c = k3store::open_database(path, k3store::OpenMode::kReadOnly);
  const auto tuning = k3reports::load_tuning(*c, run, "2026-12-31T00:00:00Z");
  ASSERT_TRUE(tuning.available);
  ASSERT_EQ(tuning.sessions.size(), 2u);  // not the other target's, not the later one
  EXPECT_EQ(tuning.sessions[1].session_id, "s1");
  EXPECT_EQ(tuning.sessions[1].measured, 7);
  EXPECT_EQ(tuning.sessions[1].rejected, 1);
  ASSERT_EQ(tuning.heatmaps.size(), 1u);
  const auto& h = tuning.heatmaps[0];
  EXPECT_EQ(h.shape, "k=2048,n=2048");
  EXPECT_EQ(h.x_knob, "tile_n");  // 3 measured values
  EXPECT_EQ(h.y_knob,
            "workers");  // 2 values, like slab_rows, but on 3 and 4 points (slab_rows 64: one)
  EXPECT_EQ(h.x_values, (std::vector<std::string>{"32", "64", "128", "256"}));
  EXPECT_EQ(h.y_values, (std::vector<std::string>{"1", "2"}));
  ASSERT_EQ(h.cells.size(), 7u);
  int best = 0;
  for (const auto& cell : h.cells) {
    if (cell.x == "64" && cell.y == "2") {
      EXPECT_EQ(*cell.mean_ns, 900);  // the fastest of its two points
      EXPECT_EQ(cell.measured, 2);
    }
    if (cell.x == "256") {
      EXPECT_FALSE(cell.mean_ns.has_value());
      EXPECT_EQ(cell.rejected, 1);
      EXPECT_NE(cell.rejected_reason.find("384 KiB"), std::string::npos);
    }
    if (cell.x == "32" && cell.y == "2") {
      EXPECT_EQ(*cell.mean_ns, 1000);
    }
    if (cell.best) {
      ++best;
      EXPECT_DOUBLE_EQ(cell.relative, 1.0);
    }
  }
  EXPECT_EQ(best, 1);
  ASSERT_EQ(tuning.tables.size(), 1u);
  EXPECT_EQ(tuning.tables[0].sessions, (std::vector<std::string>{"s1", "s2"}));
  // The evidence as the table format states it (mean in its unit, intervals as pairs).
  const auto ev = k3reports::evidence_of(tuning.tables[0].table["entries"][0]);
  EXPECT_EQ(*ev.speedup, 1.2);
  EXPECT_NEAR(*ev.speedup_low, 1.1, 1e-12);
  EXPECT_EQ(*ev.mean, 900);
  EXPECT_EQ(*ev.ci_high, 920);
  EXPECT_EQ(*ev.processes, 12);
  EXPECT_EQ(k3reports::evidence_value_text(ev, ev.mean), "0.900 us");
  EXPECT_EQ(k3reports::evidence_value_text(ev, ev.default_mean), "1.080 us");
  k3reports::EntryEvidence proxy;
  proxy.unit = "instructions per call";
  EXPECT_EQ(k3reports::evidence_value_text(proxy, 1234.0), "1234 instructions per call");
}

// The roofline's measured ceilings: what `probe` records (target_probes), the latest per target
// and CPU model, carried by `db merge` from shards once (natural key: target, CPU, time).
TEST_F(ReportFiles, TargetProbesAreKeptAndMergedOnce) {
  const std::string shard = (dir_ / "shard.db").string(), dest = (dir_ / "dest.db").string();
  {
    auto c = k3store::open_database(shard, k3store::OpenMode::kCreateOrUpdate);
    k3store::TargetProbeRecord r;
    r.target = "local";
    r.cpu_model = "AMD EPYC";
    r.host = "vm";
    r.build_hash = "b1";
    r.measured_at = "2026-11-01T00:00:00Z";
    r.membw_read_gbps = 50.0;
    k3store::insert_target_probe(*c, r);
    r.measured_at = "2026-11-02T00:00:00Z";
    r.membw_read_gbps = 60.0;
    r.peak_f32_gflops = 65.0;
    k3store::insert_target_probe(*c, r);
    r.cpu_model = "other";
    r.measured_at = "2026-11-03T00:00:00Z";
    k3store::insert_target_probe(*c, r);
    const auto latest = k3store::latest_target_probe(*c, "local", "AMD EPYC");
    ASSERT_TRUE(latest.has_value());
    EXPECT_EQ(latest->measured_at, "2026-11-02T00:00:00Z");
    EXPECT_EQ(*latest->membw_read_gbps, 60.0);
    EXPECT_EQ(*latest->peak_f32_gflops, 65.0);
    EXPECT_FALSE(latest->peak_i16_gops.has_value());
    EXPECT_FALSE(k3store::latest_target_probe(*c, "qemu", "AMD EPYC").has_value());
  }
  EXPECT_EQ(k3store::merge_databases(dest, {shard})["target_probes"], 3);
  EXPECT_EQ(k3store::merge_databases(dest, {shard})["target_probes"], 0);
  auto c = k3store::open_database(dest, k3store::OpenMode::kReadOnly);
  EXPECT_EQ(c->scalar_int("SELECT count(*) FROM target_probes"), 3);
}

}  // namespace
}  // namespace k3test::reports
