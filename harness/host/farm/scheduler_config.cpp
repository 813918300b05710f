#include "harness/host/farm/scheduler_config.h"

namespace k3farm {

const char* to_string(SchedulerKind kind) {
  switch (kind) {
    case SchedulerKind::kSlurm:
      return "slurm";
    case SchedulerKind::kBuiltin:
      break;
  }
  return "builtin";
}

std::optional<SchedulerKind> scheduler_kind(std::string_view name) {
  for (const auto k : {SchedulerKind::kBuiltin, SchedulerKind::kSlurm})
    if (name == to_string(k)) return k;
  return std::nullopt;
}

std::string SchedulerConfig::missing_key() const {
  // Slurm jobs need a partition to be submitted to; the built-in farm needs nothing more.
  if (kind == SchedulerKind::kSlurm && partition.empty()) return "partition";
  return "";
}

}  // namespace k3farm
