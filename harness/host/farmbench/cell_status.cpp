#include "harness/host/farmbench/cell_status.h"

namespace k3farmbench {

const char* to_string(CellStatus status) {
  switch (status) {
    case CellStatus::kMeasured:
      return "measured";
    case CellStatus::kFailed:
      return "failed";
    case CellStatus::kSkipped:
      return "skipped";
    case CellStatus::kUnmeasured:
      return "unmeasured";
    case CellStatus::kPending:
      break;
  }
  return "pending";
}

std::optional<CellStatus> cell_status(std::string_view text) {
  for (const auto s : {CellStatus::kPending, CellStatus::kMeasured, CellStatus::kFailed,
                       CellStatus::kSkipped, CellStatus::kUnmeasured})
    if (text == to_string(s)) return s;
  return std::nullopt;
}

}  // namespace k3farmbench
