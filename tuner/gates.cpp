#include "tuner/gates.h"

#include <algorithm>
#include <limits>
#include <set>

#include "harness/common/params/param_spec.h"
#include "k3k/table_rules.h"

namespace k3tuner {
namespace {

// Evaluates a rule (a predicate saying "take the choice") over the points.
template <typename Take>
GateRule evaluate_rule(const std::vector<GatePoint>& points, Take take) {
  GateRule r;
  double chosen = 0, best = 0;
  for (const auto& p : points) {
    const bool t = take(p);
    chosen += t ? p.yes : p.no;
    best += std::min(p.yes, p.no);
    if ((t && p.yes > p.no) || (!t && p.no > p.yes)) r.wrong.push_back(k3params::to_kv(p.shape));
  }
  r.loss = best > 0 ? chosen / best - 1 : 0;
  r.shapes = static_cast<int>(points.size());
  return r;
}

// Keeps `candidate` when it loses less; on a tie the simpler rule (listed first) stays.
void keep_better(GateRule& best, GateRule candidate) {
  if (candidate.loss < best.loss - 1e-12) best = std::move(candidate);
}

// never, always, or on iff K >= k_min and size(p) >= the size bound, over every pair of measured
// K and size values (and size 0: K alone). The size bound is stored in `size_min` of the rule.
GateRule fit_k_and_size(const std::vector<GatePoint>& points, std::int64_t GatePoint::*size,
                        std::int64_t GateRule::*size_min) {
  GateRule best = evaluate_rule(points, [](const GatePoint&) { return false; });
  best.use = "never";
  GateRule always = evaluate_rule(points, [](const GatePoint&) { return true; });
  always.use = "always";
  keep_better(best, always);
  std::set<std::int64_t> ks, sizes;
  for (const auto& p : points) {
    ks.insert(p.k);
    sizes.insert(p.*size);
  }
  sizes.insert(0);
  for (std::int64_t k : ks) {
    for (std::int64_t b : sizes) {
      GateRule r =
          evaluate_rule(points, [&](const GatePoint& p) { return p.k >= k && p.*size >= b; });
      r.use = "threshold";
      r.k_min = k;
      r.*size_min = b;
      keep_better(best, std::move(r));
    }
  }
  return best;
}

}  // namespace

nlohmann::json GateRule::to_json(const std::string& gate) const {
  nlohmann::json j = {
      {"loss", loss}, {"wrong_shapes", static_cast<int>(wrong.size())}, {"shapes", shapes}};
  if (gate == "tcm_decode" || gate == "decode_path") {
    j["use"] = use;
    if (use == "threshold") {
      j["k_min"] = k_min;
      if (gate == "tcm_decode")
        j["b_min_bytes"] = b_min;
      else
        j["w_min"] = w_min;
    }
  } else {
    j["m_min"] = std::max<std::int64_t>(1, m_min);
  }
  return j;
}

bool GateRule::takes(const std::string& gate, const GatePoint& p) const {
  if (gate == "decode_path") return k3k::rules::decode_path_takes_ime2(use, k_min, w_min, p.n, p.k);
  if (gate == "tcm_decode")
    return use == "always" || (use == "threshold" && p.k >= k_min && p.bytes >= b_min);
  return p.m >= m_min;
}

GateRule fit_tcm_gate(const std::vector<GatePoint>& points) {
  return fit_k_and_size(points, &GatePoint::bytes, &GateRule::b_min);
}

// Weights rather than packed bytes: the two differ only by the per-block scales, and the kernel
// library decides at pack time from N and K.
GateRule fit_decode_path_gate(const std::vector<GatePoint>& points) {
  return fit_k_and_size(points, &GatePoint::weights, &GateRule::w_min);
}

GateRule fit_gate(const std::string& gate, const std::vector<GatePoint>& points) {
  if (gate == "tcm_decode") return fit_tcm_gate(points);
  if (gate == "decode_path") return fit_decode_path_gate(points);
  return fit_m_gate(points);
}

GateRule fit_m_gate(const std::vector<GatePoint>& points) {
  std::set<std::int64_t> ms;
  for (const auto& p : points) ms.insert(p.m);
  GateRule best;
  best.loss = std::numeric_limits<double>::infinity();
  // m_min above every measured M: the choice is never taken.
  ms.insert(ms.empty() ? 1 : *ms.rbegin() + 1);
  for (std::int64_t m : ms) {
    GateRule r = evaluate_rule(points, [&](const GatePoint& p) { return p.m >= m; });
    r.use = "threshold";
    r.m_min = m;
    keep_better(best, std::move(r));
  }
  return best;
}

}  // namespace k3tuner
