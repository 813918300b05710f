// How one cell of a farm sweep ended: the status every scheduler's outcome gives each cell (and
// counts: measured_cells, failed_cells, ...). Its text is the outcome JSON's "status".
#pragma once

#include <optional>
#include <string_view>

namespace k3farmbench {

enum class CellStatus {
  kPending,     // not decided yet (in the queue, or on a board)
  kMeasured,    // an ok aggregate of this run (or, under a shared queue, of another controller)
  kFailed,      // the cell failed (accuracy, unsupported shape, a runner error): not a board fault
  kSkipped,     // measured earlier (--resume), or claimed or finished by another controller
  kUnmeasured,  // no board could measure it (every board lost, attempts used up)
};

// "pending", "measured", "failed", "skipped", "unmeasured".
const char* to_string(CellStatus status);
// nullopt for text that is none of them.
std::optional<CellStatus> cell_status(std::string_view text);

}  // namespace k3farmbench
