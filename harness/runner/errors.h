// Error classes of k3bench, each with its documented exit code (see --help).
#pragma once

#include <stdexcept>
#include <string>

namespace k3runner {

enum ExitCode : int {
  kExitOk = 0,
  kExitUsage = 2,        // bad command line: unknown op, missing/unknown key, parameter out of range
  kExitUnsupported = 3,  // valid syntax but an unsupported shape (K % 64, size <= 0, too large)
  kExitAccuracy = 4,     // the kernel's output broke the reference bound
  kExitInternal = 5,     // anything else (a bug, an I/O failure writing --dump)
};

struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};
struct UnsupportedShape : std::runtime_error {
  using std::runtime_error::runtime_error;
};

}  // namespace k3runner
