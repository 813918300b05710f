#include "apps/nightly/night_summary.h"

#include <algorithm>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "apps/nightly/board_events_section.h"
#include "harness/common/sys/text_file.h"
#include "tuner/table.h"

namespace k3nightly {
namespace {

namespace fs = std::filesystem;

std::string summary_file_text(const std::string& path) {
  return k3sys::read_text(path);
}

// The part of a step's name after `prefix` ("" when the step is not one of that kind).
std::string judged_part(const StepLine& l, const std::string& prefix) {
  return l.name.rfind(prefix, 0) == 0 ? l.name.substr(prefix.size()) : std::string();
}

// A cell of a Markdown table: no bar or line break inside.
std::string table_cell(std::string s) {
  std::replace(s.begin(), s.end(), '|', '/');
  std::replace(s.begin(), s.end(), '\n', ' ');
  return s;
}

// The verdict of each board fingerprint: its report's summary (paired A/B on the board) up to its
// figures, which stay in the board's own report.html.
void boards(std::string& t, const NightlyOutcome& o, const std::vector<StepLine>& lines) {
  for (const auto& l : lines) {
    const std::string board = judged_part(l, "board-judge-");
    if (board.empty()) continue;
    t += fmt::format(
        "\n## Board {}: tonight's runner against the previous nightly's, on the board\n\n", board);
    const std::string report = o.dir + "/boards/" + board + "/summary.md";
    if (l.status == "done" && fs::exists(report)) {
      std::string text = summary_file_text(report);
      if (const auto figures = text.find("\n## Figures"); figures != std::string::npos)
        text.resize(figures + 1);
      // The board's own headings sit under this one.
      std::string nested;
      std::istringstream in(text);
      for (std::string line; std::getline(in, line);)
        nested += (line.rfind("#", 0) == 0 ? "##" + line : line) + "\n";
      t += nested + fmt::format("\nFigures: {}/boards/{}/report.html\n", o.dir, board);
    } else {
      t += fmt::format("{}: {}\n", l.status, l.note);
    }
  }
}

// Tonight's counts always (a first night has no verdict, but its figures are the night's news),
// then the exact verdict of each counted path against the previous nightly's counts.
void counts(std::string& t, const NightlyOutcome& o, const std::vector<StepLine>& lines,
            const NightlyState& s) {
  const auto detail = s.details.value("count", nlohmann::json::object());
  const auto rows = detail.is_object() ? detail.value("counts", nlohmann::json::array())
                                       : nlohmann::json::array();
  if (!rows.empty()) {
    t +=
        "\n## Tonight's instruction counts\n\n| runner | VLEN | op | shape | instructions per call "
        "| +- jitter |\n|---|---:|---|---|---:|---:|\n";
    for (const auto& r : rows)
      t += fmt::format(
          "| {} | {} | {} | {} | {:.0f} | {:.0f} |\n", table_cell(r.value("path", "")),
          r.value("vlen", 0), table_cell(r.value("op", "")),
          table_cell(r["shape"].is_string() ? r["shape"].get<std::string>() : r["shape"].dump()),
          r.value("instructions_per_call", 0.0), r.value("jitter", 0.0));
  }
  for (const auto& l : lines) {
    const std::string path = judged_part(l, "count-verdict-");
    if (path.empty()) continue;
    t +=
        fmt::format("\n## Instruction counts, {} runner: exact verdict against nightly {}\n\n",
                    path, s.previous_counts_nightly.empty() ? "(none)" : s.previous_counts_nightly);
    const std::string out = o.dir + "/logs/" + l.name + ".out";
    if (l.status == "done" && fs::exists(out))
      t += summary_file_text(out) + "\n";
    else
      t += fmt::format("{}: {}\n", l.status, l.note);
  }
  if (!rows.empty() && s.previous_counts_nightly.empty())
    t += "\nNo earlier nightly counted these: the figures above are the first of their series.\n";
}

// Tonight's tables against the previous nightly's of the same name (`k3tune table diff`).
void tables(std::string& t, const NightlyOutcome& o, const NightlyState& s) {
  if (!fs::exists(o.dir + "/tables")) return;
  std::vector<std::string> names;
  for (const auto& f : fs::directory_iterator(o.dir + "/tables"))
    if (f.path().extension() == ".json") names.push_back(f.path().filename().string());
  std::sort(names.begin(), names.end());
  if (names.empty()) return;
  t += fmt::format("\n## Tables against nightly {}\n\n",
                   s.previous_tables_nightly.empty() ? "(none)" : s.previous_tables_nightly);
  for (const auto& name : names) {
    const std::string old_table = s.previous_tables_dir + "/tables/" + name;
    if (s.previous_tables_dir.empty() || !fs::exists(old_table)) {
      t += fmt::format("- {}: new tonight (no table of that name before)\n", name);
      continue;
    }
    try {
      const std::string diff = k3tuner::diff_tables(k3tuner::read_table(old_table),
                                                    k3tuner::read_table(o.dir + "/tables/" + name));
      t += fmt::format("{}:\n\n```\n{}```\n\n", name, diff.empty() ? "identical\n" : diff);
    } catch (const std::exception& e) {
      t += fmt::format("- {}: not compared: {}\n", name, e.what());
    }
  }
}

}  // namespace

std::string night_summary(const NightlyOutcome& o, const NightlyRequest& rq,
                          const std::vector<StepLine>& lines, const NightlyState& s) {
  std::string t = fmt::format("# Nightly {} ({} profile, farm {})\n\n", o.id, rq.profile, rq.farm);
  t += fmt::format("Verdict: {} (exit {})\n\n", o.verdict, o.exit_code);
  if (!s.baseline_note.empty()) t += fmt::format("Baseline: {}\n", s.baseline_note);
  boards(t, o, lines);
  counts(t, o, lines, s);
  tables(t, o, s);
  // Quarantines and power cycles of the farm's boards while the nightly ran.
  t += board_events_section(rq.farm, rq.root, rq.db_path,
                            static_cast<double>(std::time(nullptr)) - o.wall_s - 1);
  t += "\n## Steps\n\n| step | status | exit | wall s | note |\n|---|---|---:|---:|---|\n";
  for (const auto& l : lines)
    t += fmt::format("| {} | {} | {} | {:.1f} | {} |\n", l.name, l.status, l.exit_code, l.wall_s,
                     table_cell(l.note));
  t += fmt::format(
      "\nReport: {0}/report.html, {0}/summary.md  \nSite: {2}  \nTables: {0}/tables/  \n"
      "Logs: {0}/logs/  \nDatabase: {1}\n",
      o.dir, rq.db_path, o.site.empty() ? o.publish_note : o.site + "/index.html");
  return t;
}

}  // namespace k3nightly
