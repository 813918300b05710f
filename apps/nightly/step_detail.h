// What the nightly keeps of a step's JSON output as the step's detail (what later steps and the
// night's summary read), taken only from output that follows its form's versioned schema.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/host/bench/child_output.h"

namespace k3nightly {

// The detail of the output in `out_path` of a step whose form is `kind` (schemas under `root`).
// Output that does not follow its schema gives no detail and its problems in `problems` (the step
// fails: what later steps would read from it is missing or means something else); a step that
// printed nothing (it failed before its result) has no detail, and its exit code says why.
nlohmann::json step_detail(const std::string& root, k3bench::ChildOutput kind,
                           const std::string& out_path, std::vector<std::string>& problems);

}  // namespace k3nightly
