// Gate fitting: a binary choice (the TCM decode pipeline on or off; one layer or another for
// prefill) measured on many shapes, and the threshold rule that loses least in total against the
// per-shape best:
//   tcm_decode:   on  iff  K >= k_min  and  packed weight bytes >= b_min   (or never / always);
//   prefill_path: the first choice iff M >= m_min.
// Loss = sum over shapes of the time the rule's choice takes / sum of the per-shape best - 1; the
// shapes where the rule picks the slower side are reported. Candidate thresholds are the measured
// shapes' own values (a threshold between two measured values decides nothing more).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace k3tuner {

struct GatePoint {
  nlohmann::json shape;
  std::int64_t k = 0, n = 0, m = 0, bytes = 0;  // bytes: packed weights
  double yes = 0, no = 0;                        // mean time with the choice taken / not taken
};

struct GateRule {
  std::string use = "never";  // never | always | threshold
  std::int64_t k_min = 0, b_min = 0, m_min = 0;
  double loss = 0;            // relative, see above
  std::vector<std::string> wrong;  // shapes where the rule's choice is the slower one
  int shapes = 0;
  nlohmann::json to_json(const std::string& gate) const;
};

GateRule fit_tcm_gate(const std::vector<GatePoint>& points);
GateRule fit_m_gate(const std::vector<GatePoint>& points);

}  // namespace k3tuner
