// The disturbance rule: what, seen around one repetition, makes its time untrustworthy. Applied to
// the before/after readings of the repetition (environment_readings: cpufreq per allowed CPU,
// thermal zones) and the calling thread's CPU and the process's CPU migrations:
//   * any CPU's frequency changed (throttling, a governor at work);
//   * a thermal zone rose by more than `thermal_tolerance_c` (the chip is heating into throttling);
//   * the threads are pinned and one of them migrated anyway (the pin did not hold);
//   * the calling thread got less than 90% of the wall time on its CPU (`cpu_share`, its CPU time
//     over the repetition's wall time; -1 when not applicable): another task preempted it. The
//     calling thread is worker 0 and spins while it waits for the others, so it is busy for the
//     whole repetition unless the pool parks its idle threads (then the share is not judged).
// Unpinned threads move all the time on a shared machine; that is part of what the process-level
// statistics average over, not a disturbance. k3tune keeps a disturbed process but does not count
// it, and measures the cell once more in its place.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace k3runner {

std::vector<std::string> disturbances(const nlohmann::json& before, const nlohmann::json& after,
                                      int cpu_before, int cpu_after, double migrations, bool pinned,
                                      double cpu_share = -1, double thermal_tolerance_c = 2.0);

}  // namespace k3runner
