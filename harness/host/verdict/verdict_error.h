// The one-line failure of a verdict: a run that cannot be found or holds no pair to judge, a bad
// rules file (file:line: key: what). Reports fail on the same input and a few of their own (an
// output folder that cannot be written, the chart library missing), so k3reports::ReportError is
// this type: one error a caller catches for "no verdict or report from this input".
#pragma once

#include <stdexcept>

namespace k3verdict {

struct VerdictError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

}  // namespace k3verdict
