#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "harness/host/store/maintenance.h"

namespace k3store {
namespace {

std::string query_of(const std::string& table) {
  if (table == "aggregates") {
    return "SELECT c.target, c.op, c.shape_json, c.params_json, c.build_hash, a.* FROM aggregates a"
           " JOIN cells c USING (cell_key) ORDER BY a.run_uuid, c.op, c.shape_json, c.params_json";
  }
  return "SELECT * FROM " + table;  // table is one of exportable_tables(), never user text
}

std::string csv_field(const std::string& v) {
  if (v.find_first_of(",\"\n\r") == std::string::npos) return v;
  std::string out = "\"";
  for (char ch : v) {
    if (ch == '"') out += '"';
    out += ch;
  }
  return out + "\"";
}

}  // namespace

const std::vector<std::string>& exportable_tables() {
  static const std::vector<std::string> tables = {"aggregates", "samples", "processes",
                                                  "cells",      "runs",    "builds"};
  return tables;
}

void export_table(Connection& c, const std::string& table, const std::string& format,
                  std::ostream& out) {
  bool known = false;
  for (const auto& t : exportable_tables()) known = known || t == table;
  if (!known) {
    throw StoreError(fmt::format("--table: unknown table '{}' (known: {})", table,
                                 fmt::join(exportable_tables(), ", ")));
  }
  if (format != "csv" && format != "json")
    throw StoreError(fmt::format("--format: '{}' is not csv, json, gbench or bmf", format));
  auto s = c.prepare(query_of(table));
  const int n = s.columns();
  if (format == "csv") {
    for (int i = 0; i < n; ++i) out << (i ? "," : "") << csv_field(s.column_name(i));
    out << "\n";
    while (s.step()) {
      for (int i = 0; i < n; ++i) {
        out << (i ? "," : "");
        if (s.is_null(i)) continue;
        out << csv_field(s.text(i));
      }
      out << "\n";
    }
    return;
  }
  nlohmann::json rows = nlohmann::json::array();
  while (s.step()) {
    nlohmann::json row = nlohmann::json::object();
    for (int i = 0; i < n; ++i) {
      const std::string name = s.column_name(i);
      if (s.is_null(i)) {
        row[name] = nullptr;
      } else if (name.size() > 5 && name.ends_with("_json")) {
        row[name.substr(0, name.size() - 5)] = nlohmann::json::parse(s.text(i), nullptr, false);
      } else if (name == "source_runs" || name == "cmake_options") {
        row[name] = nlohmann::json::parse(s.text(i), nullptr, false);
      } else {
        const std::string text = s.text(i);
        // Numbers stay numbers: SQLite gives back what was stored (REAL or INTEGER).
        char* end = nullptr;
        const double v = std::strtod(text.c_str(), &end);
        if (!text.empty() && end == text.c_str() + text.size() && name != "run_uuid" &&
            name != "cell_key" && name != "build_hash") {
          if (text.find_first_of(".eE") == std::string::npos)
            row[name] = static_cast<long long>(v);
          else
            row[name] = v;
        } else {
          row[name] = text;
        }
      }
    }
    rows.push_back(std::move(row));
  }
  out << rows.dump(2) << "\n";
}

}  // namespace k3store
