#include <fmt/format.h>

#include "harness/host/store/maintenance.h"

namespace k3store {

std::vector<std::string> check_database(Connection& c) {
  std::vector<std::string> problems;
  {
    auto s = c.prepare("PRAGMA integrity_check");
    while (s.step()) {
      if (s.text(0) != "ok") problems.push_back("integrity_check: " + s.text(0));
    }
  }
  {
    auto s = c.prepare("PRAGMA foreign_key_check");
    while (s.step()) {
      problems.push_back(fmt::format("foreign key: table {} row {} references a missing {} row",
                                     s.text(0), s.text(1), s.text(2)));
    }
  }
  {
    auto s = c.prepare(
        "SELECT p.run_uuid, p.cell_key, p.process_index, json_extract(c.measure_json, "
        "'$.repetitions') AS reps,"
        " (SELECT count(*) FROM samples x WHERE x.run_uuid = p.run_uuid AND x.cell_key = p.cell_key"
        "   AND x.process_index = p.process_index) AS n"
        " FROM processes p JOIN cells c USING (cell_key) WHERE p.status = 'ok' AND n <> reps");
    while (s.step()) {
      problems.push_back(fmt::format("run {} cell {} process {}: {} samples, expected {}",
                                     s.text(0), s.text(1).substr(0, 12), s.integer(2), s.integer(4),
                                     s.integer(3)));
    }
  }
  {
    auto s = c.prepare(
        "SELECT run_uuid, cell_key FROM aggregates a WHERE status = 'ok' AND processes + "
        "excluded_processes <>"
        " (SELECT count(*) FROM processes p WHERE p.cell_key = a.cell_key AND p.status = 'ok' AND"
        "  (p.run_uuid = a.run_uuid OR a.source_runs LIKE '%\"' || p.run_uuid || '\"%'))");
    while (s.step()) {
      problems.push_back(
          fmt::format("aggregate run {} cell {}: process count does not match its processes",
                      s.text(0), s.text(1).substr(0, 12)));
    }
  }
  return problems;
}

RowCounts result_row_counts(Connection& c) {
  const auto rows = [&](const char* table) {
    return c.scalar_int(fmt::format("SELECT count(*) FROM {}", table));
  };
  return {rows("builds"),    rows("runs"),    rows("cells"),
          rows("processes"), rows("samples"), rows("aggregates")};
}

}  // namespace k3store
