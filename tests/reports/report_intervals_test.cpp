// Intervals a quantity can have: a time measured in two processes and a tuned entry judged in one
// paired round get words ("too few for an interval"), never a negative or zero-width interval, in
// every output -- summary.md, report.html, report.json and the published site. The run is the real
// k3bench behind the synthetic runner (100 us per call, +-0.5%), in a real SQLite file.
#include <gtest/gtest.h>

#include <fstream>
#include <regex>

#include "harness/host/verdict/value_text.h"
#include "report_test_support.h"
#include "reports/tuning.h"
#include "tests/support/bench_config.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace k3test::reports {
namespace {

// Any "a .. b" or "[a, b]" pair of numbers in `text` whose low end is negative or whose ends are
// equal: what the rule forbids.
std::string impossible_interval(const std::string& text) {
  static const std::regex pair(R"((-?[0-9]+(?:\.[0-9]+)?) ?(?:\.\.|,) ?(-?[0-9]+(?:\.[0-9]+)?))");
  for (std::sregex_iterator it(text.begin(), text.end(), pair), end; it != end; ++it) {
    const double low = std::stod((*it)[1]), high = std::stod((*it)[2]);
    const std::string context =
        text.substr(std::max<std::ptrdiff_t>(0, it->position() - 40), it->length() + 80);
    if (low < 0) return "negative: " + context;
    if (low == high && context.find("CI") == std::string::npos &&
        context.find("[") != std::string::npos)
      return "zero width: " + context;
  }
  return "";
}

// A page without its scripts (the chart library's code is full of "a, -1" pairs).
std::string without_scripts(std::string page) {
  for (std::size_t at; (at = page.find("<script")) != std::string::npos;) {
    const std::size_t end = page.find("</script>", at);
    page.erase(at, end == std::string::npos ? std::string::npos : end + 9 - at);
  }
  return page;
}

TEST(ReportIntervalText, EvidenceBelowTheCountsARuleNeedsIsWords) {
  json entry = decode_table_entry(1000, 1.259);
  entry["evidence"]["processes"] = 2;
  entry["evidence"]["speedup_ci95"] = {1.259, 1.259};  // what one paired round leaves
  entry["evidence"]["paired_rounds"] = 1;
  entry["evidence"]["conclusive"] = false;
  const auto ev = k3reports::evidence_of(entry);
  EXPECT_FALSE(ev.ci_low || ev.ci_high || ev.speedup_low || ev.speedup_high);
  EXPECT_EQ(k3reports::evidence_interval_text(ev), "2 processes: too few for an interval");
  EXPECT_EQ(k3reports::speedup_interval_text(ev), "(1 paired round: too few for an interval)");
  // Enough of both: the intervals as the table states them.
  const auto enough = k3reports::evidence_of(decode_table_entry(1000, 1.259));
  EXPECT_EQ(k3reports::evidence_interval_text(enough), "0.980 us .. 1.020 us");
  EXPECT_EQ(k3reports::speedup_interval_text(enough), "[1.159, 1.359]");

  // A cell's interval: a time needs three processes (even where an old database stored one);
  // an instruction count carries its jitter whatever its process count.
  const k3verdict::PerCall time{false}, counts{true};
  EXPECT_EQ(time.interval(-666790.0, 2256554.0, 2), "2 processes: too few for an interval");
  EXPECT_EQ(time.interval(std::nullopt, std::nullopt, 1), "1 process: too few for an interval");
  EXPECT_EQ(time.interval(99000.0, 101000.0, 3), "99.000 .. 101.000");
  EXPECT_EQ(counts.interval(1000.0, 1004.0, 1), "1000 .. 1004");
}

class ReportIntervals : public ReportTest {};

TEST_F(ReportIntervals, ATwoProcessTimeAndAOneRoundEvidenceShowNoImpossibleInterval) {
  use_runner(synthetic_runner("k3bench-two", kCallNs));
  const std::string run =
      bench(measure_table(2, 3, "0.002") + decode_case("[{ n = 256, k = 512 }]"));
  {  // A table whose entry was judged in one paired round, from before the run.
    auto c = open();
    create_tuning_tables(*c);
    add_tuning_session(*c, "s1", "2020-01-01T00:00:00Z", "local", "linear_decode");
    json entry = decode_table_entry(1000, 1.259);
    entry["evidence"]["processes"] = 2;
    entry["evidence"]["speedup_ci95"] = {1.259, 1.259};
    entry["evidence"]["paired_rounds"] = 1;
    entry["evidence"]["conclusive"] = false;
    add_tuning_table(*c, "tab1", "2020-01-01T01:00:00Z", {"s1"}, entry);
  }
  const fs::path out = dir_ / "report";
  const auto r = k3tune({"report", run, "-o", out.string()});
  ASSERT_EQ(r.code, 0) << r.err;

  const std::string md = read(out / "summary.md");
  const std::string html = without_scripts(read(out / "report.html"));
  for (const auto* text : {&md, &html}) {
    EXPECT_NE(text->find("2 processes: too few for an interval"), std::string::npos) << *text;
    EXPECT_NE(text->find("1 paired round: too few for an interval"), std::string::npos) << *text;
    EXPECT_EQ(impossible_interval(*text), "");
  }
  const json report = json::parse(read(out / "report.json"));
  for (const auto& cell : report["run"]["cells"]) {
    EXPECT_EQ(cell["processes"], 2);
    EXPECT_EQ(cell["ci95_ns"], json::array({nullptr, nullptr})) << cell.dump();
  }

  const fs::path site = dir_ / "site";
  const auto p = k3tune({"publish", site.string()});
  ASSERT_EQ(p.code, 0) << p.err;
  int pages = 0;
  for (const auto& f : fs::recursive_directory_iterator(site)) {
    if (f.path().extension() != ".html") continue;
    ++pages;
    const std::string page = without_scripts(read(f.path()));
    EXPECT_EQ(impossible_interval(page), "") << f.path();
  }
  EXPECT_GT(pages, 1);
  EXPECT_NE(read(site / "index.html").find("too few for an interval"), std::string::npos);
}

}  // namespace
}  // namespace k3test::reports
