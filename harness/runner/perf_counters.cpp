#include "harness/runner/perf_counters.h"

#include <dirent.h>
#include <linux/perf_event.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>

namespace k3runner {
namespace {

struct CounterSpec {
  const char* name;
  std::uint32_t type;
  std::uint64_t config;
};
// Hardware counters split time into compute and memory; the software counters (kept by the kernel,
// so they work in VMs and under qemu-user where the PMU does not) say whether the threads were
// moved or preempted while a repetition ran.
constexpr CounterSpec kSpecs[] = {
    {"cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES},
    {"instructions", PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS},
    {"cache_misses", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_MISSES},
    {"stalled_cycles_frontend", PERF_TYPE_HARDWARE, PERF_COUNT_HW_STALLED_CYCLES_FRONTEND},
    {"stalled_cycles_backend", PERF_TYPE_HARDWARE, PERF_COUNT_HW_STALLED_CYCLES_BACKEND},
    {"cpu_migrations", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_MIGRATIONS},
    {"context_switches", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CONTEXT_SWITCHES},
};

std::vector<int> thread_ids() {
  std::vector<int> tids;
  if (DIR* d = opendir("/proc/self/task")) {
    while (dirent* e = readdir(d)) {
      if (e->d_name[0] != '.') tids.push_back(std::atoi(e->d_name));
    }
    closedir(d);
  }
  return tids;
}

int open_counter(const CounterSpec& spec, int tid) {
  perf_event_attr attr{};
  attr.size = sizeof(attr);
  attr.type = spec.type;
  attr.config = spec.config;
  attr.exclude_hv = 1;
  attr.read_format = PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING;
  // Migrations and context switches happen in the kernel: count them there when allowed
  // (perf_event_paranoid < 2 or privileged), else fall back to user space only like the rest.
  if (spec.type == PERF_TYPE_SOFTWARE) {
    const int fd = static_cast<int>(syscall(SYS_perf_event_open, &attr, tid, -1, -1, 0));
    if (fd >= 0) return fd;
  }
  attr.exclude_kernel = 1;
  return static_cast<int>(syscall(SYS_perf_event_open, &attr, tid, -1, -1, 0));
}

std::string reason_of(int err) {
  switch (err) {
    case ENOENT:
      return "perf_event_open: ENOENT (this PMU does not implement the event)";
    case EOPNOTSUPP:
      return "perf_event_open: EOPNOTSUPP (no hardware PMU, e.g. a VM or qemu-user)";
    case EACCES:
    case EPERM:
      return "perf_event_open: permission denied (see /proc/sys/kernel/perf_event_paranoid)";
    case ENOSYS:
      return "perf_event_open: not implemented by this kernel or emulator";
    default:
      return std::string("perf_event_open: ") + std::strerror(err);
  }
}

}  // namespace

PerfCounters::PerfCounters() {
  const std::vector<int> tids = thread_ids();
  for (const auto& spec : kSpecs) {
    Counter c{spec.name, {}};
    int err = 0;
    for (int tid : tids) {
      const int fd = open_counter(spec, tid);
      if (fd < 0) {
        err = errno;
        break;
      }
      c.fds.push_back(fd);
    }
    if (err != 0 || c.fds.empty()) {
      for (int fd : c.fds) close(fd);
      unavailable_[spec.name] = err != 0 ? reason_of(err) : "no threads found in /proc/self/task";
      continue;
    }
    available_.push_back(spec.name);
    counters_.push_back(std::move(c));
  }
}

PerfCounters::~PerfCounters() {
  for (auto& c : counters_)
    for (int fd : c.fds) close(fd);
}

std::vector<double> PerfCounters::read() const {
  std::vector<double> totals;
  for (const auto& c : counters_) {
    double sum = 0;
    for (int fd : c.fds) {
      std::uint64_t v[3] = {0, 0, 0};  // value, time enabled, time running
      if (::read(fd, v, sizeof(v)) != static_cast<ssize_t>(sizeof(v))) continue;
      sum += v[2] > 0 ? double(v[0]) * double(v[1]) / double(v[2]) : 0.0;
    }
    totals.push_back(sum);
  }
  return totals;
}

nlohmann::json PerfCounters::status_json() const {
  return {{"available", available_}, {"unavailable", unavailable_}};
}

}  // namespace k3runner
