#include "tuner/verify_command.h"

#include <cmath>
#include <filesystem>

#include <fmt/format.h>

#include "harness/common/params/param_spec.h"
#include "harness/host/bench/bench_session.h"
#include "harness/host/bench/catalog.h"
#include "harness/host/bench/provenance.h"
#include "harness/host/bench/user_error.h"
#include "harness/host/stats/signed_rank.h"
#include "harness/host/stats/stats.h"
#include "harness/host/store/database.h"
#include "harness/host/store/results.h"
#include "harness/host/verdict/regression_config.h"
#include "harness/host/verdict/verdict.h"
#include "harness/host/verdict/verdict_error.h"
#include "tuner/objective.h"
#include "tuner/table.h"

namespace k3tuner {

const char* to_string(EntryVerdict verdict) {
  switch (verdict) {
    case EntryVerdict::kFaster:
      return "faster";
    case EntryVerdict::kSlower:
      return "slower";
    case EntryVerdict::kNoDifference:
      return "no difference";
    case EntryVerdict::kFailed:
      break;
  }
  return "failed";
}

std::string VerifiedEntry::verdict_text() const {
  return verdict == EntryVerdict::kFailed ? "failed: " + failure : to_string(verdict);
}
namespace {

// A shape of the class: the class's keys, buckets at their upper end (the shape the tuner's
// measurements are nearest to when it tuned the model's shapes).
std::map<std::string, std::string> shape_of(const std::string& op, const nlohmann::json& cls) {
  std::map<std::string, std::string> shape;
  for (const auto& [k, v] : cls.items()) {
    if (k == "path") continue;
    const std::string value = std::to_string(v.get<std::int64_t>());
    if (k == "m_bucket")
      shape["m"] = value;
    else if (k == "ctx_bucket")
      shape[op == "attn_decode" ? "ctx" : "seq"] = value;
    else
      shape[k] = value;
  }
  return shape;
}

struct Pair {
  VerifiedEntry entry;
  k3bench::CellSpec tuned, defaults;
};

// Both sides' values, aligned round by round (a process is a round in the within design), or why
// the entry could not be measured.
struct SidesMeasured {
  Candidate tuned, defaults;
  std::string failure;
  std::string stop_reason;
};

// One process per side and round, the side that goes first alternating between rounds, so a drift
// within a round favours neither. A round counts when both sides have an undisturbed process in
// it. A disturbed process is kept in the database, not counted, and measured again (twice at
// most); a round that still lacks a side is made up by one more round at the end (at most as many
// extra rounds as asked for), so a busy machine costs time, not the verdict.
SidesMeasured measure_in_rounds(TimeObjective& objective, const Pair& p, int processes) {
  SidesMeasured out;
  out.stop_reason = "fixed count";
  int started[2] = {0, 0};  // processes per side, disturbed ones included (the database's index)
  // A table that chose the defaults measures one cell on both sides: one process index sequence,
  // or the second side's process 0 would collide with the first's in the database.
  const bool one_cell = p.tuned.params == p.defaults.params;
  int counted = 0;
  for (int round = 0; counted < processes && round < 2 * processes && out.failure.empty();
       ++round) {
    double value[2] = {0, 0};  // [tuned, defaults]
    bool clean[2] = {false, false};
    for (int side = 0; side < 2 && out.failure.empty(); ++side) {
      const bool tuned_side = (side == 0) == (round % 2 == 0);
      for (int attempt = 0; attempt < 3; ++attempt) {
        const Measurement m = objective.measure(tuned_side ? p.tuned : p.defaults,
                                                started[tuned_side || one_cell ? 0 : 1]++, round);
        if (m.rejected) {
          out.failure = fmt::format(
              "{}: {}", tuned_side ? "the table's parameters" : "the defaults", m.reason);
          break;
        }
        if (m.disturbed) continue;
        value[tuned_side ? 0 : 1] = m.value;
        clean[tuned_side ? 0 : 1] = true;
        break;
      }
    }
    if (!out.failure.empty() || !clean[0] || !clean[1]) continue;
    out.tuned.values.push_back(value[0]);
    out.tuned.rounds.push_back(round);
    out.defaults.values.push_back(value[1]);
    out.defaults.rounds.push_back(round);
    ++counted;
  }
  return out;
}

// Both sides in every process (k3bench --params-b): the repetitions alternate the defaults (A) and
// the table's parameters (B) in pairs A B, B A, ..., each side getting the asked-for repetitions,
// and a process gives one pair of side means. The machine's process-to-process spread, most of
// the noise on a shared VM, is common to both sides of a pair and cancels in its ratio. After the
// first `processes`, processes are added until the MDE reaches `mde_target` (VerifyCommand::mde)
// or `max_processes` are counted. A disturbed process is kept, not counted, and replaced (at most
// three per counted process, about what the rounds allow a side: a process holds twice the
// repetitions, so twice the chance of a disturbance on a busy machine).
SidesMeasured measure_within_processes(TimeObjective& objective, const Pair& p,
                                       const VerifyCommand& c, double mde_target,
                                       const k3verdict::RegressionConfig& rules) {
  SidesMeasured out;
  k3bench::CellSpec both = p.defaults;
  both.settings.params_b = p.tuned.params;
  both.settings.repetitions = 2 * p.defaults.settings.repetitions;
  const int most = mde_target > 0 ? std::max(c.processes, c.max_processes) : c.processes;
  std::vector<double> log_ratios;
  int counted = 0;
  for (int index = 0; index < 4 * most; ++index) {
    const Measurement m = objective.measure(both, index, index);
    if (m.rejected) {
      out.failure = "the defaults and the table's parameters in one process: " + m.reason;
      return out;
    }
    if (m.disturbed) continue;
    out.defaults.values.push_back(m.value);
    out.defaults.rounds.push_back(index);
    out.tuned.values.push_back(m.value_b);
    out.tuned.rounds.push_back(index);
    log_ratios.push_back(std::log(m.value_b / m.value));
    if (++counted < c.processes) continue;
    if (mde_target <= 0) {
      out.stop_reason = "fixed count";
      return out;
    }
    // MDE <= target, as one power evaluation; the MDE itself only for the stop reason.
    const bool reached = k3stats::signed_rank_power_from_magnitudes(log_ratios, mde_target,
                                                                    rules.alpha) >= rules.power;
    if (!reached && counted < most) continue;
    const double mde =
        k3stats::signed_rank_mde_from_magnitudes(log_ratios, rules.alpha, rules.power);
    // A real difference keeps the magnitudes, and so this MDE, large: such an entry runs to the
    // ceiling (its verdict is decided long before; the sign-free rule cannot see that).
    out.stop_reason = reached
                          ? fmt::format("sign-free MDE {:.1f}% within the target {:.1f}%",
                                        100 * mde, 100 * mde_target)
                          : fmt::format("max processes ({}; sign-free MDE {:.1f}%, target {:.1f}%)",
                                        most, 100 * mde, 100 * mde_target);
    return out;
  }
  out.stop_reason = "too many disturbed processes";
  return out;
}

// The table, valid (schema and loader), and the options that go with it.
nlohmann::json checked_table(const VerifyCommand& c) {
  const nlohmann::json table = read_table(c.table);
  const auto problems =
      validate_table(table, c.root + "/configs/schema/tuning-table.schema.json").lines();
  if (!problems.empty()) throw k3bench::UserError(fmt::format("{}: {}", c.table, problems.front()));
  if (c.processes < 2)
    throw k3bench::UserError("--processes: at least 2 per side (a CI needs two pairs)");
  if (c.design != "within" && c.design != "rounds")
    throw k3bench::UserError(fmt::format("--design: '{}' is not within or rounds", c.design));
  if (c.design == "rounds" && c.mde > 0)
    throw k3bench::UserError("--mde: adds processes of the within design only (--design within)");
  return table;
}

// A table made for another board (a fingerprint fact differs), or an emulated target, is measured
// only with --force.
void refuse_other_board(const VerifyCommand& c, const nlohmann::json& table,
                        const TargetFacts& facts, const k3targets::Target& target) {
  const nlohmann::json& fp = table["board"]["fingerprint"];
  auto differs = [&](const char* key) { return fp.at(key) != facts.fingerprint.at(key); };
  for (const char* key : {"marchid", "vlen", "cpus", "tcm"})
    if (differs(key) && !c.force)
      throw k3bench::UserError(fmt::format(
          "{}: /board/fingerprint/{}: the table was made for {}, target {} has {} "
          "(--force to measure anyway)",
          c.table, key, fp.at(key).dump(), target.name(), facts.fingerprint.at(key).dump()));
  if (facts.emulated_target && !c.force)
    throw k3bench::UserError(fmt::format(
        "target {} runs under qemu-user: its wall time verifies nothing (--force)", target.name()));
}

// Adding processes until the MDE is reached keeps only the signed-rank test exact (its null
// distribution does not depend on the magnitudes the rule looks at; a t statistic's would).
bool adds_processes_exactly(const k3verdict::RegressionConfig& rules) {
  return rules.estimator == k3stats::PairedEstimator::kHodgesLehmann;
}

// The regression rules the entries are judged by, refused for --mde when they would not keep the
// test exact.
k3verdict::RegressionConfig regression_rules(const VerifyCommand& c) {
  k3verdict::RegressionConfig rules;
  try {
    rules = k3verdict::load_regression_config(
        c.rules_file.empty() ? c.root + "/configs/regression.toml" : c.rules_file);
  } catch (const k3verdict::VerdictError& e) {
    throw k3bench::UserError(e.what());
  }
  if (c.mde > 0 && !adds_processes_exactly(rules))
    throw k3bench::UserError(fmt::format(
        "--mde: {} sets estimator = \"mean\"; adding processes until the MDE is reached keeps "
        "only the signed-rank test exact (estimator = \"hodges-lehmann\")",
        rules.source));
  return rules;
}

// Each entry's two cells, the table's parameters and the defaults on the entry's class, built
// (and so every op, shape and parameter checked) before anything is written.
std::vector<Pair> pairs_of(const VerifyCommand& c, const nlohmann::json& table,
                           const k3bench::Catalog& catalog) {
  std::vector<Pair> pairs;
  for (const auto& e : table["entries"]) {
    Pair p;
    p.entry.id = e["id"];
    p.entry.op = e["op"];
    const std::string where = fmt::format("{} entry {}", c.table, p.entry.id);
    const k3bench::OpSpec& op = catalog.op(p.entry.op, where);
    std::map<std::string, std::string> params;
    for (const auto& [k, v] : e["params"].items()) params[k] = k3params::value_text(v);
    for (auto* cell : {&p.tuned, &p.defaults}) {
      cell->op = op.name;
      cell->shape = catalog.normalise(op, shape_of(op.name, e["class"]), true, where);
      cell->settings = c.settings;
      cell->settings.path = e["class"]["path"];
    }
    p.tuned.params = catalog.normalise(op, params, false, where);
    p.defaults.params = catalog.normalise(op, {}, false, where);
    p.entry.shape = p.tuned.shape;
    p.entry.params = e["params"];
    p.entry.claimed = e["evidence"].value("speedup", 0.0);
    pairs.push_back(std::move(p));
  }
  return pairs;
}

// The entry's verdict from both sides' values, counted in `out`. A: the defaults, B: the table's
// parameters; B "slower" is a regression of the table.
void judge(VerifiedEntry& v, const SidesMeasured& m, const k3verdict::RegressionConfig& rules,
           const std::optional<k3store::NoiseFloorRecord>& noise_floor, VerifyOutcome& out) {
  const Candidate& tuned = m.tuned;
  const Candidate& defaults = m.defaults;
  const std::string& failure = m.failure;
  const k3verdict::TimingVerdict t =
      failure.empty()
          ? k3verdict::paired_timing_verdict(v.op, {defaults.rounds, defaults.values},
                                             {tuned.rounds, tuned.values}, rules, noise_floor)
          : k3verdict::TimingVerdict{};
  if (!failure.empty() || t.outcome == k3verdict::Outcome::kNotCompared) {
    v.verdict = EntryVerdict::kFailed;
    v.failure = failure.empty() ? "too many disturbed processes (" + t.not_compared + ")" : failure;
    ++out.failed;
    return;
  }
  const auto ci = k3stats::t_interval(tuned.values);
  v.evidence.mean = ci.mean;
  v.evidence.ci_low = std::isfinite(ci.half_width) ? ci.low : ci.mean;
  v.evidence.ci_high = std::isfinite(ci.half_width) ? ci.high : ci.mean;
  v.evidence.default_mean = defaults.mean();
  v.evidence.processes = tuned.measurements();
  v.evidence.speedup = t.speedup.value;
  v.evidence.speedup_low = t.speedup.low;
  v.evidence.speedup_high = t.speedup.high;
  v.evidence.paired = true;
  v.evidence.paired_rounds = tuned.measurements();
  v.threshold = t.threshold;
  v.mde = t.cmp.mde;
  if (t.outcome == k3verdict::Outcome::kImprovement) {
    v.verdict = EntryVerdict::kFaster;
    ++out.faster;
  } else if (t.outcome == k3verdict::Outcome::kRegression) {
    v.verdict = EntryVerdict::kSlower;
    ++out.slower;
  } else {
    v.verdict = EntryVerdict::kNoDifference;
    ++out.same;
  }
}

}  // namespace

VerifyOutcome run_verify(const k3targets::Target& target, const VerifyCommand& c) {
  VerifyOutcome out;
  const nlohmann::json table = checked_table(c);
  out.facts = probe_target(target);
  refuse_other_board(c, table, out.facts, target);
  const k3verdict::RegressionConfig rules = regression_rules(c);
  out.rules = rules.source;
  const bool sequential = adds_processes_exactly(rules);
  const k3bench::Catalog catalog = k3bench::Catalog::from_target(target);
  const std::string build_hash = k3bench::sha256_file(target.runner_path());
  std::vector<Pair> pairs = pairs_of(c, table, catalog);

  auto db = k3store::open_for_writing(c.db_path);
  if (!k3store::find_build(*db, build_hash))
    k3store::upsert_build(*db, k3bench::build_from_runner(target, build_hash));
  out.run_uuid = k3bench::new_uuid();
  k3store::insert_run(*db, {out.run_uuid, c.command_line, target.name(), build_hash, "", "[]", 0, 0,
                            0, nlohmann::json{{"verify", c.table}}.dump()});
  const auto noise_floor =
      rules.use_noise_floor
          ? k3store::latest_noise_floor(*db, target.name(),
                                        out.facts.fingerprint.value("cpu_model", std::string()))
          : std::nullopt;
  TimeObjective objective(target, build_hash, *db, out.run_uuid, target.config().timeout_s);
  double log_sum = 0;
  int logs = 0;
  for (auto& p : pairs) {
    const double mde_target =
        c.design == "rounds" || c.mde == 0 || !sequential
            ? 0
            : (c.mde > 0 ? c.mde : k3verdict::verdict_threshold(p.entry.op, rules, noise_floor));
    const SidesMeasured m = c.design == "rounds"
                                ? measure_in_rounds(objective, p, c.processes)
                                : measure_within_processes(objective, p, c, mde_target, rules);
    p.entry.mde_target = mde_target;
    p.entry.stop_reason = m.stop_reason;
    judge(p.entry, m, rules, noise_floor, out);
    if (p.entry.verdict != EntryVerdict::kFailed) {
      log_sum += std::log(p.entry.evidence.speedup);
      ++logs;
    }
    out.entries.push_back(p.entry);
  }
  k3store::finish_run(*db, out.run_uuid, 0, 0, 0);
  out.geomean_speedup = logs > 0 ? std::exp(log_sum / logs) : 1.0;
  out.verdict = fmt::format(
      "{}: {} entries: {} faster, {} no difference, {} slower{}; geometric-mean speed-up {:.3f}x",
      out.slower > 0 || out.failed > 0 ? "NOT VERIFIED" : "verified", out.entries.size(),
      out.faster, out.same, out.slower,
      out.failed > 0 ? fmt::format(", {} failed", out.failed) : "", out.geomean_speedup);
  return out;
}

}  // namespace k3tuner
