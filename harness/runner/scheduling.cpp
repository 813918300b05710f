#include "harness/runner/scheduling.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>

namespace k3runner {
namespace {

// "sum_exec_runtime run_delay pcount" (ns, ns, count); -1 when unreadable.
double thread_run_delay_ns(const std::filesystem::path& schedstat) {
  std::ifstream in(schedstat);
  double exec_ns = 0, delay_ns = 0;
  if (!(in >> exec_ns >> delay_ns)) return -1;
  return delay_ns;
}

double process_run_delay_ns() {
  std::error_code ec;
  double total = 0;
  bool any = false;
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task", ec)) {
    const double d = thread_run_delay_ns(task.path() / "schedstat");
    if (d < 0) continue;  // a thread that ended between listing and reading
    total += d;
    any = true;
  }
  return any ? total : -1;
}

double machine_steal_ns() {
  std::ifstream in("/proc/stat");
  std::string line;
  if (!std::getline(in, line) || line.rfind("cpu ", 0) != 0) return -1;
  std::istringstream fields(line.substr(4));
  // user nice system idle iowait irq softirq steal: the eighth column, in USER_HZ ticks.
  double value = 0;
  for (int column = 0; column < 8; ++column)
    if (!(fields >> value)) return -1;
  const long ticks_per_s = sysconf(_SC_CLK_TCK);
  return ticks_per_s > 0 ? value * 1e9 / double(ticks_per_s) : -1;
}

double difference(double before, double after) {
  return before < 0 || after < 0 ? -1 : after - before;
}

}  // namespace

SchedulingSnapshot scheduling_snapshot() {
  // K3BENCH_SCHEDULING=off: instruction counts (which count the whole process) turn the readings
  // off; parsing /proc text whose length varies would add jitter to every counted process.
  static const bool enabled = [] {
    const char* v = std::getenv("K3BENCH_SCHEDULING");
    return v == nullptr || std::string_view(v) != "off";
  }();
  if (!enabled) return {};
  return {process_run_delay_ns(), machine_steal_ns()};
}

SchedulingSnapshot scheduling_delta(const SchedulingSnapshot& before,
                                    const SchedulingSnapshot& after) {
  return {difference(before.run_delay_ns, after.run_delay_ns),
          difference(before.steal_ns, after.steal_ns)};
}

}  // namespace k3runner
