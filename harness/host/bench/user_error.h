// The failure a k3tune user sees as one line: bad input (a file, field or option), a target that
// cannot run, a run that cannot be found. Commands print "k3tune: <message>", exit 2, and write
// nothing. Library code throws it once input has been validated against what it names.
#pragma once

#include <stdexcept>

namespace k3bench {

struct UserError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

}  // namespace k3bench
