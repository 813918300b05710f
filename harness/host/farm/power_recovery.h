// Power recovery of a dead board through the lab's PDU daemon (pdu_client.h), done by
// Farm::power_recover (farm.h). A board quarantined as unreachable or hung -- ssh failed or died,
// no answer at all, runner timeouts in a row -- whose inventory entry names a PDU outlet gets:
//
//   power_requested  pdudaemon accepted a reboot of the outlet (or refused it: the reason says)
//   power_done       the outlet's off/on delay has passed
//   came_back        SSH answers again (the shared connection is opened afresh)
//   not_back         ... or it did not within pdu.ssh_wait_s
//   healthy          the runner was deployed (hash check) and the probe passed; stale TCM
//                    blocks were released first when the inventory sets recover_tcm_locks
//   unhealthy        ... or not (the reason says why)
//   recovered        the quarantine is lifted: the board goes back into the run
//   given_up         power_attempts_per_day cycles were requested today (UTC): it stays out
//
// Each is a farm_board_events row (farm_state.h). Bad readings (a marchid mismatch, a reboot seen
// by the probe, throttling, a failed deploy) are not cured by a power cycle and never trigger one.
#pragma once

#include <string>

#include "harness/host/farm/board.h"

namespace k3farm {

// Whether a power cycle may cure the fault: unreachable, unresponsive, repeated runner timeouts.
bool power_recoverable(Fault f);

// The start of today in UTC, as now_utc_us() writes times ("2026-12-06T00:00:00.000000Z").
std::string utc_day_start();

}  // namespace k3farm
