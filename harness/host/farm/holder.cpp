#include "harness/host/farm/holder.h"

#include <unistd.h>

#include <fstream>
#include <sstream>

#include "harness/common/sys/text_file.h"

namespace k3farm {
using k3sys::read_first_line;

std::string this_host() {
  char name[256] = {};
  gethostname(name, sizeof(name) - 1);
  return name;
}

std::string this_actor() {
  return this_host() + ":" + std::to_string(getpid());
}

std::string process_start(std::int64_t pid) {
  const std::string stat = read_first_line("/proc/" + std::to_string(pid) + "/stat");
  if (stat.empty()) return "";
  // Field 22 (starttime) counts from after the ")" that closes the command name.
  const auto close = stat.rfind(')');
  if (close == std::string::npos) return "";
  std::istringstream in(stat.substr(close + 2));
  std::string field;
  in >> field;                  // field 3: state
  if (field == "Z") return "";  // a zombie has exited: dead, only not yet reaped
  for (int i = 4; i <= 22 && in >> field; ++i) {
  }
  return read_first_line("/proc/sys/kernel/random/boot_id") + ":" + field;
}

std::optional<bool> holder_alive(const k3store::LeaseRow& row) {
  if (row.holder_host != this_host()) return std::nullopt;
  return process_start(row.holder_pid) == row.holder_start;
}

}  // namespace k3farm
