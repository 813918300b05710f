#include "harness/host/slurm/slurm_validate.h"

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "harness/host/bench/user_error.h"
#include "harness/host/farm/farm.h"

namespace k3slurm {

ChosenFarm load_farm(const std::string& file, const std::string& root,
                     const std::vector<std::string>& boards, const std::vector<std::string>& tags) {
  ChosenFarm out;
  try {
    out.farm = k3farm::Farm::load(file, root);
    out.boards = k3farm::select_boards(out.farm, boards, tags);
  } catch (const std::runtime_error& e) {
    throw k3bench::UserError(e.what());
  } catch (const std::invalid_argument& e) {  // an unknown board or tag
    throw k3bench::UserError(e.what());
  }
  return out;
}

std::vector<std::string> job_options(const k3farm::SchedulerConfig& s,
                                     const std::string& reservation,
                                     const std::vector<std::string>& partition_nodes,
                                     const std::vector<std::string>& boards) {
  std::vector<std::string> o{"--partition=" + s.partition};
  if (!s.gres.empty()) o.push_back("--gres=" + s.gres);
  if (!s.constraint.empty()) o.push_back("--constraint=" + s.constraint);
  const std::string resv = reservation.empty() ? s.reservation : reservation;
  if (!resv.empty()) o.push_back("--reservation=" + resv);
  if (!s.account.empty()) o.push_back("--account=" + s.account);
  if (!s.qos.empty()) o.push_back("--qos=" + s.qos);
  std::vector<std::string> others;
  for (const auto& n : partition_nodes)
    if (std::find(boards.begin(), boards.end(), n) == boards.end()) others.push_back(n);
  if (!others.empty()) o.push_back(fmt::format("--exclude={}", fmt::join(others, ",")));
  return o;
}

std::vector<std::string> validate_slurm_farm(const k3farm::FarmConfig& farm,
                                             const std::vector<std::string>& boards,
                                             const std::string& reservation,
                                             const SlurmClient& slurm) {
  const auto& s = farm.scheduler;
  const auto refuse = [](const std::string& key, const std::string& what) {
    return k3bench::UserError(fmt::format("{}: {}", key, what));
  };
  std::vector<std::string> nodes;
  try {
    nodes = slurm.partition_nodes(s.partition);
  } catch (const SlurmMissing& e) {
    throw refuse(s.key("scheduler"), fmt::format("slurm, but {}", e.what()));
  } catch (const SlurmRefused& e) {
    throw refuse(s.key("partition"), fmt::format("Slurm: {}", e.what()));
  }
  for (const auto& b : boards)
    if (std::find(nodes.begin(), nodes.end(), b) == nodes.end())
      throw refuse(fmt::format("boards.{} ({})", b, farm.find(b)->defined_in),
                   fmt::format("not a node of Slurm partition '{}' (its nodes: {})", s.partition,
                               nodes.empty() ? "none" : fmt::format("{}", fmt::join(nodes, ", "))));
  const std::string resv = reservation.empty() ? s.reservation : reservation;
  const std::string resv_key = reservation.empty() ? s.key("reservation") : "--reservation";
  if (!resv.empty()) {
    try {
      slurm.reservation_nodes(resv);
    } catch (const SlurmRefused& e) {
      throw refuse(resv_key, fmt::format("Slurm: {}", e.what()));
    }
  }
  // sbatch --test-only with one more key each time: the first refusal names its key.
  k3farm::SchedulerConfig partial;
  partial.partition = s.partition;
  const std::pair<std::string, std::string k3farm::SchedulerConfig::*> steps[] = {
      {"gres", &k3farm::SchedulerConfig::gres},
      {"constraint", &k3farm::SchedulerConfig::constraint},
      {"account", &k3farm::SchedulerConfig::account},
      {"qos", &k3farm::SchedulerConfig::qos}};
  const auto test = [&](const std::string& key, const std::string& with_resv) {
    try {
      slurm.test_submit(job_options(partial, with_resv, nodes, boards));
    } catch (const SlurmRefused& e) {
      throw refuse(key, fmt::format("Slurm: {}", e.what()));
    }
  };
  // With every chosen board inside the reservation, no job outside it can run at all, and Slurm
  // refuses the bare partition ("Requested node configuration is not available"): then every key
  // is tested inside the reservation (which exists: checked above).
  std::string inside;
  try {
    test(s.key("partition"), "");
  } catch (const k3bench::UserError&) {
    if (resv.empty()) throw;
    inside = resv;
    test(s.key("partition"), inside);
  }
  for (const auto& [name, member] : steps) {
    if ((s.*member).empty()) continue;
    partial.*member = s.*member;
    test(s.key(name), inside);
  }
  if (!resv.empty()) test(resv_key, resv);
  return job_options(s, reservation, nodes, boards);
}

}  // namespace k3slurm
