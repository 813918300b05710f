#include "harness/host/farm/board_doctor_facts.h"

#include <sstream>

#include <fmt/format.h>

#include "harness/host/farm/board.h"
#include "harness/host/farm/health.h"

namespace k3farm {
namespace {

// $1 "1" to honour test hooks, $2 work dir, then the CPUs to pin (none: every online CPU). Fixed
// text: values arrive as positional arguments only. The opt-in write comes first in the same task
// that then pins (exec keeps the task): /proc/set_ai_thread opts in the writing thread, and
// without it sched_setaffinity to an A100 core fails with EINVAL.
constexpr const char* kDoctorScript = R"sh(hooks=$1; wd=$2; shift 2
if [ -e /proc/set_ai_thread ]; then
  if [ -w /proc/set_ai_thread ]; then echo "ai_thread writable"; else echo "ai_thread readonly"; fi
else
  echo "ai_thread absent"
fi
online=
for c in /sys/devices/system/cpu/cpu[0-9]*; do
  [ -r "$c/online" ] && [ "$(cat "$c/online")" = 0 ] && continue
  online="$online ${c##*/cpu}"
done
echo "cpus_online$online"
[ $# -eq 0 ] && set -- $online
if command -v taskset >/dev/null 2>&1; then
  for c in "$@"; do
    if out=$( (if [ -w /proc/set_ai_thread ]; then echo 0 > /proc/set_ai_thread; fi
               exec taskset -c "$c" true) 2>&1); then
      echo "pin $c ok"
    else
      echo "pin $c fail $(printf '%s\n' "$out" | tail -n 1)"
    fi
  done
else
  echo "taskset absent"
fi
awk '/^processor/ { p = $3 } /^marchid/ { print "cpu_marchid", p, $3 }' /proc/cpuinfo
n=0
for z in /sys/class/thermal/thermal_zone*; do
  [ -e "$z" ] || continue
  n=$((n + 1))
  cat "$z/temp" >/dev/null 2>&1 || echo "thermal_unreadable ${z##*/}"
done
echo "thermal_zones $n"
d=$wd
while [ ! -d "$d" ]; do d=$(dirname -- "$d"); done
df -Pk -- "$d" | awk -v d="$d" 'NR == 2 { print "disk_free_kib", $4, d }'
echo "perf_event_paranoid $(cat /proc/sys/kernel/perf_event_paranoid 2>/dev/null || echo absent)"
echo "perf_user_access $(cat /proc/sys/kernel/perf_user_access 2>/dev/null || echo absent)"
if [ "$hooks" = 1 ] && [ -r "$wd/test-hooks/doctor_facts" ]; then cat "$wd/test-hooks/doctor_facts"; fi
echo end)sh";

std::string rest_of(std::istream& in) {
  std::string rest;
  std::getline(in >> std::ws, rest);
  return rest;
}

void parse_pin(std::istream& in, DoctorFacts& f) {
  int cpu = -1;
  std::string result;
  if (!(in >> cpu >> result)) return;
  f.pin_errors[cpu] = result == "ok" ? "" : rest_of(in);
  if (result != "ok" && f.pin_errors[cpu].empty()) f.pin_errors[cpu] = "taskset failed";
}

}  // namespace

void parse_doctor_facts(const std::string& text, DoctorFacts& f) {
  for_each_fact_line(text, [&](const std::string& key, std::istream& in) {
    if (key == "ai_thread") {
      in >> f.ai_thread;
    } else if (key == "cpus_online") {
      f.cpus_online.clear();
      for (int c = 0; in >> c;) f.cpus_online.push_back(c);
    } else if (key == "pin") {
      parse_pin(in, f);
    } else if (key == "taskset") {
      f.taskset = false;
    } else if (key == "cpu_marchid") {
      int cpu = -1;
      std::string id;
      if (in >> cpu >> id) f.cpu_marchid[cpu] = id;
    } else if (key == "thermal_unreadable") {
      f.thermal_unreadable.push_back(rest_of(in));
    } else if (key == "thermal_zones") {
      in >> f.thermal_zones;
    } else if (key == "disk_free_kib") {
      in >> f.disk_free_kib;
      f.disk_path = rest_of(in);
    } else if (key == "perf_event_paranoid") {
      in >> f.perf_event_paranoid;
    } else if (key == "perf_user_access") {
      in >> f.perf_user_access;
    }
  });
}

std::optional<DoctorFacts> read_doctor_facts(const Board& board, const std::vector<int>& cpus,
                                             double timeout_s, std::string* why) {
  const BoardConfig& c = board.config();
  std::vector<std::string> argv{
      "sh", "-c", kDoctorScript, "k3farm-doctor", c.test_hooks ? "1" : "0", c.work_dir};
  for (int cpu : cpus) argv.push_back(std::to_string(cpu));
  const auto r = board.exec(argv, timeout_s);
  if (board.classify(r, why) != Fault::kNone) return std::nullopt;
  if (r.out.find("\nend") == std::string::npos) {
    *why = fmt::format("board {}: check script output incomplete", board.name());
    return std::nullopt;
  }
  DoctorFacts f;
  parse_doctor_facts(r.out, f);
  return f;
}

}  // namespace k3farm
