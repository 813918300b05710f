// The one-line failure of a report: a run that cannot be found, a bad configuration file
// (file:line: key: what), an unreadable database, an output directory that cannot be written, the
// vendored chart library missing. `k3tune report` prints it and exits with kReportFailed. The
// verdict rules fail on the same input, so it is their error type (one type for callers to catch).
#pragma once

#include "harness/host/verdict/verdict_error.h"

namespace k3reports {

using ReportError = k3verdict::VerdictError;

}  // namespace k3reports
