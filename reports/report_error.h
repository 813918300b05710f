// The one-line failure of a report: a run that cannot be found, a bad configuration file
// (file:line: key: what), an unreadable database, an output directory that cannot be written, the
// vendored chart library missing. `k3tune report` prints it and exits with kReportFailed.
#pragma once

#include <stdexcept>

namespace k3reports {

struct ReportError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

}  // namespace k3reports
