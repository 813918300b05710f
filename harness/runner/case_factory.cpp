#include "harness/runner/case_factory.h"

#include <stdexcept>

#include <fmt/format.h>

#include "harness/runner/environment.h"
#include "harness/runner/errors.h"

namespace k3runner {

const OpInfo& op_named(const std::string& name) {
  if (const OpInfo* op = find_op(name)) return *op;
  std::string names;
  for (const auto& x : all_ops()) names += (names.empty() ? "" : ", ") + x.name;
  throw UsageError(fmt::format("--op: unknown op '{}' (known: {})", name, names));
}

void check_case_fits(long long bytes) {
  const long long avail = available_memory_bytes();
  if (avail > 0 && bytes > avail * 8 / 10) {
    throw UnsupportedShape(
        fmt::format("--shape: the case needs about {:.1f} GiB but only {:.1f} GiB is available",
                    bytes / 1073741824.0, avail / 1073741824.0));
  }
}

std::unique_ptr<OpCase> make_case(const OpInfo& op, const CaseInputs& in) {
  std::unique_ptr<OpCase> c;
  try {
    c = op.make(in);
  } catch (const std::invalid_argument& e) {
    throw UnsupportedShape(e.what());  // kernel-side validation of the shape
  }
  c->set_path(in.path);
  return c;
}

}  // namespace k3runner
