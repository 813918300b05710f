// Building a prepared case from its description: the op by name, the case's memory against what
// the machine has, and the kernel's own validation of the shape, each failure its k3bench error
// class (errors.h). k3bench's main and the kernel plugin (plugin/) build their cases here, so a
// second build refuses a case in the same words as the first.
#pragma once

#include <memory>
#include <string>

#include "harness/runner/op_case.h"

namespace k3runner {

// The op called `name`; UsageError naming the known ops otherwise.
const OpInfo& op_named(const std::string& name);

// Throws UnsupportedShape when `bytes` is more than 80% of the memory available.
void check_case_fits(long long bytes);

// op.make(in) with the path set; a shape the kernels reject is UnsupportedShape.
std::unique_ptr<OpCase> make_case(const OpInfo& op, const CaseInputs& in);

}  // namespace k3runner
