// k3bench --table: parameters not given on the command line come from the tuning table's entry for
// the op, path and shape (through the kernel library's loader, so k3bench refuses exactly what an
// engine would refuse).
#pragma once

#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "k3k/dispatch.h"
#include "harness/runner/op_case.h"

namespace k3runner {

// Loads `table_path` (or, when empty, whatever K3_TUNING_TABLE names) and describes the load the
// way every k3bench result reports it: {"table": source, "loaded": bool, "refused": why}. Null
// when no table was asked for.
nlohmann::json load_tuning_table_report(const std::string& table_path);

// Loads `table_path` (or, when empty, whatever K3_TUNING_TABLE names), fills `given` with the
// entry's parameters that are not in it already, and returns what the result reports: the table,
// whether it was loaded or why not, the entry, and each parameter's source ("command line",
// "table <entry id>" or "default"). Null when no table was asked for.
nlohmann::json apply_tuning_table(const std::string& table_path, const OpInfo& op,
                                  const std::map<std::string, std::string>& shape,
                                  k3k::KernelPath path, std::map<std::string, std::string>& given);

}  // namespace k3runner
