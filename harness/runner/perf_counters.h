// Hardware counters through perf_event_open, read around every repetition so reports can split
// time into compute and memory. Counters are opened per thread for every thread of the process
// that exists when the object is built (the worker pool is already running then), user space only
// (works at perf_event_paranoid <= 2), and summed over threads. A counter that cannot be opened is
// reported as unavailable with the reason (no PMU in a VM, paranoid setting, qemu-user, ...).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace k3runner {

class PerfCounters {
 public:
  PerfCounters();  // opens what it can; never throws
  ~PerfCounters();
  PerfCounters(const PerfCounters&) = delete;
  PerfCounters& operator=(const PerfCounters&) = delete;

  const std::vector<std::string>& available() const { return available_; }
  // Current totals of the available counters (same order as available()), scaled for
  // multiplexing by time_enabled / time_running.
  std::vector<double> read() const;
  // {"available": [...], "unavailable": {"name": "reason", ...}}
  nlohmann::json status_json() const;

 private:
  struct Counter {
    std::string name;
    std::vector<int> fds;  // one per thread
  };
  std::vector<Counter> counters_;
  std::vector<std::string> available_;
  nlohmann::json unavailable_ = nlohmann::json::object();
};

}  // namespace k3runner
