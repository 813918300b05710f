// --dump DIR: the case's arrays as raw little-endian files plus manifest.json.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/runner/op_case.h"

namespace k3runner {
// Writes DIR/<name>.bin for each array and DIR/manifest.json; throws std::runtime_error on I/O errors.
void write_dump(const std::string& dir, const nlohmann::json& header, const std::vector<DumpArray>& arrays);
}  // namespace k3runner
