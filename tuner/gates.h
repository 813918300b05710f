// Gate fitting: a binary choice (the TCM decode pipeline on or off; one layer or another) measured
// on many shapes, and the threshold rule that loses least in total against the per-shape best:
//   tcm_decode:   on  iff  K >= k_min  and  packed weight bytes >= b_min   (or never / always);
//   decode_path:  ime2 iff  K >= k_min  and  weights N*K >= w_min          (or never / always;
//                 the rule is k3k::rules::decode_path_takes_ime2, what the kernel library applies);
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
  std::int64_t weights = 0;                      // N*K
  double yes = 0, no = 0;                        // mean time with the choice taken / not taken
};

struct GateRule {
  std::string use = "never";  // never | always | threshold
  std::int64_t k_min = 0, b_min = 0, w_min = 0, m_min = 0;
  double loss = 0;                 // relative, see above
  std::vector<std::string> wrong;  // shapes where the rule's choice is the slower one
  int shapes = 0;
  nlohmann::json to_json(const std::string& gate) const;
  // Whether the rule of `gate` takes the choice at `p` (what the fit evaluated).
  bool takes(const std::string& gate, const GatePoint& p) const;
};

GateRule fit_tcm_gate(const std::vector<GatePoint>& points);
GateRule fit_decode_path_gate(const std::vector<GatePoint>& points);
GateRule fit_m_gate(const std::vector<GatePoint>& points);
// The fit of `gate` (tcm_decode, decode_path or prefill_path).
GateRule fit_gate(const std::string& gate, const std::vector<GatePoint>& points);

}  // namespace k3tuner
