// The nightly summary's section on the farm's boards during the night: every board event
// (quarantines, power cycles through the lab's PDU daemon and their steps, recoveries, boards given
// up; harness/host/farm/power_recovery.h) recorded since the nightly began.
#pragma once

#include <string>

namespace k3nightly {

// "## Boards during the night" with one table row per event of the farm `farm_spec` (a file or
// "local") in the database at `db_path` at or after `since_unix_s`; "" when there were none or
// the farm or database cannot be read (the summary never fails for this section).
std::string board_events_section(const std::string& farm_spec, const std::string& root,
                                 const std::string& db_path, double since_unix_s);

}  // namespace k3nightly
