// What a board's first-night check reads beyond the health probe (health.h): the A100 opt-in file,
// whether each CPU takes an affinity, the marchid of every CPU, thermal zones that exist but cannot
// be read, free disk under work_dir, and the perf counter policy. One board-side script, read
// only: it writes nothing on the board (the pinning test pins a short-lived `true`).
//
// Test hooks (inventory test_hooks = true): <work_dir>/test-hooks/doctor_facts is appended to the
// script's output, and a later line wins over an earlier one for the same key (and CPU), so a test
// can make a board read as having an unwritable /proc/set_ai_thread or X100 cores.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace k3farm {

class Board;

struct DoctorFacts {
  std::string ai_thread = "absent";        // "absent", "writable", "readonly" (/proc/set_ai_thread)
  bool taskset = true;                     // the board has taskset (util-linux)
  std::map<int, std::string> pin_errors;   // CPU -> why pinning failed ("" : pinned)
  std::map<int, std::string> cpu_marchid;  // CPU -> marchid from /proc/cpuinfo (none on x86/qemu)
  std::vector<int> cpus_online;
  int thermal_zones = 0;  // zones present
  std::vector<std::string> thermal_unreadable;
  long long disk_free_kib = -1;  // df -Pk of work_dir (or its nearest existing parent)
  std::string disk_path;
  std::string perf_event_paranoid;  // value, or "absent"
  std::string perf_user_access;     // value, or "absent" (RISC-V kernels have it)
};

// Parses the script's "key value..." lines into `f`.
void parse_doctor_facts(const std::string& text, DoctorFacts& f);

// Runs the script on `board`, testing pinning on `cpus` (empty: every online CPU). Returns nullopt
// and sets `why` when the board could not run it (the caller has checked it answers).
std::optional<DoctorFacts> read_doctor_facts(const Board& board, const std::vector<int>& cpus,
                                             double timeout_s, std::string* why);

}  // namespace k3farm
