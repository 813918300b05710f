// What `table verify` prints of one verified table: the JSON object `--json` gives per table (the
// nightly's verify step keeps it) and the table a person reads, entry by entry.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "tuner/verify_command.h"

namespace k3tuner {

nlohmann::json verify_json(const VerifyOutcome& out, const std::string& table,
                           const std::string& design);
void print_verify(const VerifyOutcome& out, const std::string& design);

}  // namespace k3tuner
