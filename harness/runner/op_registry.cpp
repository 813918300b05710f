#include "harness/runner/op_case.h"

#include "k3k/table_rules.h"

#include <map>

#include "k3k/worker_pool.h"
#include "harness/runner/ops/op_lists.h"
#include "harness/runner/placement.h"

namespace k3runner {

const std::vector<OpInfo>& all_ops() {
  static const std::vector<OpInfo> ops = [] {
    std::vector<OpInfo> v;
    for (auto* add : {&add_quantize_ops, &add_linear_ops, &add_attention_ops, &add_kv_cache_ops,
                      &add_small_ops, &add_membw_ops, &add_tcm_ops, &add_peak_ops, &add_gdn_ops,
                      &add_model_ops}) {
      add(v);
    }
    return v;
  }();
  return ops;
}

const OpInfo* find_op(const std::string& name) {
  for (const auto& op : all_ops())
    if (op.name == name) return &op;
  return nullptr;
}

KeySpec workers_param(std::string_view op) {
  const std::string help = "worker threads (the caller is worker 0)";
  const std::string all = std::to_string(k3k::WorkerPool::hardware_workers());
  if (k3k::rules::find_op(op) != nullptr) return table_key(op, "workers", help, all);
  return int_key("workers", help, all, 1, 256);
}

std::map<int, std::string>& pool_policies() {
  static std::map<int, std::string> policies;
  return policies;
}

nlohmann::json pool_placement_json(const k3k::WorkerPool& pool) {
  nlohmann::json workers = nlohmann::json::array();
  for (int w = 0; w < pool.size(); ++w) {
    const k3k::WorkerPlacement& p = pool.placement(w);
    nlohmann::json one = {{"worker", w}, {"cpu", p.cpu}, {"opted_in", p.opted_in}, {"pinned", p.pinned}};
    if (!p.problem.empty()) one["problem"] = p.problem;
    workers.push_back(one);
  }
  return {{"policy", pool_policies()[pool.size()]}, {"workers", workers}};
}

k3k::WorkerPool& pool_of_size(int workers) {
  static std::map<int, std::unique_ptr<k3k::WorkerPool>> pools;
  auto& p = pools[workers];
  if (!p) p = std::make_unique<k3k::WorkerPool>(pool_options(workers, &pool_policies()[workers]));
  return *p;
}

}  // namespace k3runner
