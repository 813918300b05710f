// Board health: one probe sample (uptime, load, memory, thermal zones, cpufreq, marchid, vlenb,
// TCM backend and stale TCM locks) and the comparison of two samples around a job, which says
// whether the board rebooted or throttled in between -- samples measured in that window are
// suspect and must be measured again.
#pragma once

#include <functional>
#include <istream>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/host/targets/runner_facts.h"

namespace k3farm {

struct CpuFreq {
  int cpu = -1;
  std::string governor;
  long long cur_khz = 0, max_khz = 0, hw_max_khz = 0;  // scaling_cur, scaling_max, cpuinfo_max
};

struct HealthSample {
  bool ok = false;
  std::string error;        // why the probe failed (ok == false)
  double taken_at_s = 0;    // controller wall clock, Unix seconds
  long long uptime_s = -1;  // board uptime (whole seconds)
  std::string boot_id;      // /proc/sys/kernel/random/boot_id: new on every boot
  double load1 = 0, load5 = 0, load15 = 0;
  long long mem_available_kb = -1;
  std::map<std::string, double> thermal_c;  // zone "thermal_zoneN:type" -> degrees Celsius
  std::vector<CpuFreq> cpufreq;             // CPUs exposing cpufreq
  std::string marchid;                      // /proc/cpuinfo; "" when absent (qemu-user, x86)
  std::optional<int> vlenb;                 // from the runner; nullopt: no RVV
  std::string runner_version;
  std::string tcm_backend;            // "real", "emulated", "off"
  std::string tcm_reason;             // why that backend (e.g. why the emulated one is used)
  std::vector<int> tcm_stale_blocks;  // blocks left acquired by a dead thread
  std::vector<std::string> warnings;  // not faults: stale TCM locks, hot zones, ...

  // Boot time on the controller's clock: constant for one boot, up to probe latency.
  double boot_time_s() const { return taken_at_s - static_cast<double>(uptime_s); }
  nlohmann::json to_json() const;
};

// Parses the facts script's output ("key value..." lines; see board.cpp) into `s`.
void parse_facts(const std::string& text, HealthSample& s);

// The board scripts' output is one fact a line, "key value...": `fact` gets each line's key and
// a stream of the rest (the probe's facts above and doctor's, board_doctor_facts.h).
void for_each_fact_line(
    const std::string& text,
    const std::function<void(const std::string& key, std::istream& rest)>& fact);
// Fills vlenb, marchid (when the script found none), the runner version and the TCM fields from
// the runner's own description (`k3bench --facts --json`).
void apply_runner_facts(const k3targets::RunnerFacts& facts, HealthSample& s);

// Signs of throttling in one sample, restricted to `cpus` (empty: all): a zone at or above
// max_temp_c; a "performance" governor whose current frequency is below its maximum; a scaling
// maximum below the hardware maximum.
std::vector<std::string> throttle_signs(const HealthSample& s, const std::vector<int>& cpus,
                                        double max_temp_c);

struct HealthChange {
  bool rebooted = false;
  bool throttled = false;
  std::vector<std::string> reasons;
  bool clean() const { return !rebooted && !throttled; }
};

// What happened between two probes of one board: a reboot (boot_id changed, or the boot time moved
// by more than 10 s, or uptime went backwards) or throttling (a sign in `after`, a governor change,
// a lower frequency ceiling).
HealthChange compare_samples(const HealthSample& before, const HealthSample& after,
                             const std::vector<int>& cpus, double max_temp_c);

}  // namespace k3farm
