// Who allocates the farm's boards: k3tune itself ("builtin": leases on the boards) or a Slurm
// cluster whose nodes are the inventory's boards ("slurm": k3tune submits jobs, Slurm queues them
// and picks the board; k3tune's transport still reaches the board and measures). The [farm] keys
// scheduler, partition, gres, constraint, reservation, account, qos and slurm_timeout_s
// (inventory.cpp).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace k3farm {

enum class SchedulerKind { kBuiltin, kSlurm };
// "builtin", "slurm": the [farm] scheduler value, and how provenance names the scheduler.
const char* to_string(SchedulerKind kind);
// nullopt for a name that is none of them.
std::optional<SchedulerKind> scheduler_kind(std::string_view name);

struct SchedulerConfig {
  SchedulerKind kind = SchedulerKind::kBuiltin;
  std::string partition;     // slurm: required
  std::string gres;          // e.g. "k3:1" (empty: none asked)
  std::string constraint;    // node features, Slurm's --constraint syntax
  std::string reservation;   // optional; `bench --reservation` overrides it
  std::string account, qos;  // optional
  double timeout_s = 60;  // slurm_timeout_s: Slurm silent this long mid-run stops the run (a fault)
  std::map<std::string, std::string> defined_in;  // "farm.partition" -> "file:line", for messages

  // The key this kind of scheduler needs that the farm file does not give ("" : none missing).
  std::string missing_key() const;
  // "farm.partition (farm.toml:4)": the key as an error message names it.
  std::string key(const std::string& name) const {
    const std::string k = "farm." + name;
    const auto it = defined_in.find(k);
    return it == defined_in.end() ? k : k + " (" + it->second + ")";
  }
};

}  // namespace k3farm
