#include "reports/markdown.h"

#include "reports/distribution_trend.h"

#include <algorithm>
#include <cmath>
#include <map>

#include <fmt/format.h>

#include "harness/host/verdict/value_text.h"
#include "reports/text_table.h"

namespace k3reports {
namespace {

using Align = TextTable::Align;
constexpr Align L = Align::kLeft, R = Align::kRight;

std::string pct(double x) {
  return fmt::format("{:+.1f}%", 100 * x);
}
std::string p_text(double p) {
  return fmt::format("{:.2g}", p);
}
// Run ids are UUIDs: their first group (8 hex digits) names them; build hashes: 12 hex digits.
std::string short_id(const std::string& id) {
  const auto dash = id.find('-');
  return id.substr(0, dash == std::string::npos ? 12 : dash);
}

std::string plural(int n, const char* one, const char* many) {
  return fmt::format("{} {}", n, n == 1 ? one : many);
}

// Short: the cell labels next to it need the width; the reason follows the table as a note.
std::string confirmation_text(const k3verdict::TimingVerdict& t) {
  switch (t.confirmation) {
    case k3verdict::Confirmation::kConfirmed:
      return "CONFIRMED " + pct(t.confirm_cmp->rel_diff);
    case k3verdict::Confirmation::kRefuted:
      return "refuted";
    case k3verdict::Confirmation::kUnavailable:
      return "COUNTED";
    case k3verdict::Confirmation::kInterleaved:
      return "interleaved run";
    default:
      return "unconfirmed";
  }
}

std::string run_line(const k3verdict::RunData& r) {
  std::string s =
      fmt::format("{} on {} ({}, {}", short_id(r.run_uuid), r.target, r.host, r.started_at);
  if (!r.finished_at.empty()) s += " .. " + r.finished_at;
  return s + ", " + r.status + ")";
}

std::string build_line(const k3verdict::BuildInfo& b) {
  std::string s =
      fmt::format("{} {}", short_id(b.build_hash), b.variant.empty() ? "" : "(" + b.variant + ")");
  if (!b.label.empty()) s = b.label + " " + s;
  s += ", rev " + (b.source_revision.empty() ? "unknown" : b.source_revision);
  if (!b.compiler.empty()) s += ", " + b.compiler.substr(0, b.compiler.find('\n'));
  return s;
}

void section_rules(const k3verdict::Verdict& v, std::string& out) {
  if (v.method == "exact-counts") {
    out += wrap(
               "Instruction counts under qemu-user are exact up to each case's measured jitter "
               "(the range of five identical processes: the untimed part varies by a few "
               "hundred instructions): a count that differs from the baseline's by more than "
               "twice the larger jitter is a change, anything within it is identical. No "
               "significance test, no minimum effect; more instructions count as a regression. "
               "The bytes a call streams from memory (weights, their metadata, KV cache, states: "
               "the kernels' own accounting) have no jitter at all: any increase is a "
               "regression.") +
           "\n";
    return;
  }
  std::string method =
      v.method == "welch-across-runs"
          ? "Welch's t-test on the process means of two runs taken at different times"
      : v.method == "paired-within-process"
          ? "paired t-test on per-process log ratios of two builds measured inside each process "
            "(k3bench --build-b: repetitions A B, B A, ...)"
          : "paired t-test on per-round log ratios of two builds measured in the same rounds (A B "
            "A B)";
  std::string text = fmt::format(
      "{}, alpha {}. A change is called when significant and at least the op's minimum effect ({}",
      method, v.config.alpha, v.config.source);
  if (v.noise_floor) {
    text += fmt::format(", never below the noise floor {:.2f}% of {} on '{}' measured {}",
                        100 * v.noise_floor->noise_floor, v.noise_floor->target,
                        v.noise_floor->cpu_model, v.noise_floor->measured_at);
  } else {
    text += "; no noise floor stored for this target and CPU";
  }
  text +=
      "). Unchanged cells say what the data could have seen (minimum detectable effect, power " +
      fmt::format("{}).", v.config.power);
  if (!v.design.empty()) text += " How the builds were measured: " + v.design + ".";
  if (v.method == "welch-across-runs") {
    text += v.confirm_requested
                ? " Suspected slowdowns were re-measured now, both builds interleaved (--confirm);"
                  " only confirmed ones count."
                : " Runs from different times on a machine that drifts are a screening test:"
                  " --confirm re-measures suspected slowdowns with both builds interleaved.";
  }
  out += wrap(text) + "\n";
}

// Instruction-count verdicts: the figures, the exact delta and the jitter, per outcome.
void section_exact(const k3verdict::Verdict& v, k3verdict::Outcome outcome, const char* title,
                   std::string& out) {
  // The target names the emulated CPU (qemu-vlen<V>): the same case is counted at several VLENs.
  TextTable t(
      {"cell", "on", "base insns", "cand insns", "delta insns", "change", "identical within"},
      {L, L, R, R, R, R, R});
  for (const auto& c : v.cells) {
    if (c.timing.outcome != outcome || !c.timing.exact) continue;
    t.add({c.label, c.b != nullptr ? c.b->target : "", v.per_call.text(c.timing.cmp.mean_a),
           v.per_call.text(c.timing.cmp.mean_b), fmt::format("{:+.0f}", c.timing.exact->delta),
           pct(c.timing.cmp.rel_diff), fmt::format("+-{:.0f}", c.timing.exact->tolerance)});
  }
  if (!t.empty()) out += fmt::format("### {}\n\n", title) + t.markdown() + "\n";
}

// The cells whose streamed bytes per call changed between two exact-count runs (more: a
// regression, whatever the instructions did).
void section_bytes(const k3verdict::Verdict& v, std::string& out) {
  TextTable t({"cell", "on", "base bytes", "cand bytes", "delta bytes", "change", "verdict"},
              {L, L, R, R, R, R, L});
  for (const auto& c : v.cells) {
    if (!c.bytes || c.bytes->delta() == 0) continue;
    t.add({c.label, c.b != nullptr ? c.b->target : "", fmt::format("{:.0f}", c.bytes->base),
           fmt::format("{:.0f}", c.bytes->cand), fmt::format("{:+.0f}", c.bytes->delta()),
           pct(c.bytes->base != 0 ? c.bytes->delta() / c.bytes->base : 0),
           c.bytes_regression() ? "MORE BYTES" : "fewer bytes"});
  }
  if (!t.empty())
    out += "### Bytes streamed per call\n\n(per token for a whole model's phase)\n\n" +
           t.markdown() + "\n";
}

void section_regressions(const k3verdict::Verdict& v, std::string& out) {
  if (v.method == "exact-counts") {
    section_bytes(v, out);
    return section_exact(v, k3verdict::Outcome::kRegression, "More instructions", out);
  }
  const std::string u = v.per_call.unit();
  TextTable t({"cell", "base " + u, "cand " + u, "change", "p", "confirmation"},
              {L, R, R, R, R, L});
  std::vector<std::string> notes;
  for (const auto& c : v.cells) {
    if (c.timing.outcome != k3verdict::Outcome::kRegression) continue;
    t.add({c.label, v.per_call.text(c.timing.cmp.mean_a), v.per_call.text(c.timing.cmp.mean_b),
           pct(c.timing.cmp.rel_diff), p_text(c.timing.cmp.p_value), confirmation_text(c.timing)});
    if (!c.timing.confirm_note.empty()) notes.push_back(c.label + ": " + c.timing.confirm_note);
  }
  if (t.empty()) return;
  out += "### Slower\n\n" + t.markdown() + "\n";
  for (const auto& n : notes) out += wrap(n, kTextWidth, "- ", "  ");
  if (!notes.empty()) out += "\n";
}

void section_improvements(const k3verdict::Verdict& v, std::string& out) {
  if (v.method == "exact-counts")
    return section_exact(v, k3verdict::Outcome::kImprovement, "Fewer instructions", out);
  const std::string u = v.per_call.unit();
  TextTable t({"cell", "base " + u, "cand " + u, "change", "p", "speed-up [95% CI]"},
              {L, R, R, R, R, R});
  for (const auto& c : v.cells) {
    if (c.timing.outcome != k3verdict::Outcome::kImprovement) continue;
    const auto& s = c.timing.speedup;
    t.add({c.label, v.per_call.text(c.timing.cmp.mean_a), v.per_call.text(c.timing.cmp.mean_b),
           pct(c.timing.cmp.rel_diff), p_text(c.timing.cmp.p_value),
           fmt::format("{:.2f} [{:.2f}, {}]", s.value, s.low,
                       std::isfinite(s.high) ? fmt::format("{:.2f}", s.high) : "inf")});
  }
  if (t.empty()) return;
  out += "### Faster\n\n" + t.markdown() + "\n";
  if (v.method == "welch-across-runs")
    out +=
        wrap(
            "Across runs and not re-measured (--confirm re-measures slowdowns only): on a machine "
            "that drifts, check a speed-up interleaved (bench --baseline-runner) before relying on "
            "it.") +
        "\n";
}

void section_unchanged(const k3verdict::Verdict& v, std::string& out) {
  if (v.method == "exact-counts")
    return section_exact(v, k3verdict::Outcome::kUnchanged, "Identical", out);
  const std::string u = v.per_call.unit();
  TextTable t({"cell", "base " + u, "cand " + u, "change", "p", "unchanged within"},
              {L, R, R, R, R, R});
  for (const auto& c : v.cells) {
    if (c.timing.outcome != k3verdict::Outcome::kUnchanged) continue;
    t.add({c.label, v.per_call.text(c.timing.cmp.mean_a), v.per_call.text(c.timing.cmp.mean_b),
           pct(c.timing.cmp.rel_diff), p_text(c.timing.cmp.p_value),
           fmt::format("+-{:.1f}%", 100 * std::max(c.timing.cmp.mde, c.timing.threshold))});
  }
  if (!t.empty()) out += "### Unchanged\n\n" + t.markdown() + "\n";
}

void section_accuracy(const k3verdict::Verdict& v, std::string& out) {
  std::string lines;
  for (const auto& c : v.cells) {
    const auto& a = c.accuracy;
    if (a.ratio_flagged) {
      lines += wrap(
          fmt::format("{}: worst error/bound {:.3g} -> {:.3g} (+{:.3g}, allowed +{:.3g})", c.label,
                      *a.ratio_a, *a.ratio_b, *a.ratio_b - *a.ratio_a, v.config.max_ratio_increase),
          kTextWidth, "- ACCURACY ", "  ");
    }
    if (a.checksum_flagged) {
      lines += wrap(fmt::format("{}: output checksum {} -> {} (this op's outputs must not change)",
                                c.label, a.checksum_a, a.checksum_b),
                    kTextWidth, "- OUTPUT CHANGED ", "  ");
    }
  }
  int checked = 0, identical = 0;
  for (const auto& c : v.cells) {
    checked += c.accuracy.ratio_a && c.accuracy.ratio_b;
    identical += c.accuracy.checksum_required && !c.accuracy.checksum_flagged;
  }
  out += "### Accuracy\n\n";
  out += lines.empty()
             ? wrap(fmt::format("No accuracy flag: {} cells compared by worst error/bound (allowed "
                                "increase {:.3g}); {} outputs that must stay identical are.",
                                checked, v.config.max_ratio_increase, identical))
             : lines;
  out += "\n";
}

void section_failed(const k3verdict::Verdict& v, std::string& out) {
  if (!v.failed.empty()) {
    out += "### Failed cells\n\n";
    for (const auto& f : v.failed)
      out += wrap(fmt::format("{} ({}): {}", f.label, f.side, f.reason), kTextWidth, "- ", "  ");
    out += "\n";
  }
  auto list = [&](const std::vector<std::string>& labels, const char* what) {
    if (labels.empty()) return;
    std::string text = fmt::format("{} {}: ", labels.size(), what);
    for (std::size_t i = 0; i < labels.size() && i < 6; ++i) text += (i ? "; " : "") + labels[i];
    if (labels.size() > 6) text += fmt::format("; and {} more", labels.size() - 6);
    out += wrap(text, kTextWidth, "- ", "  ");
  };
  list(v.only_in_baseline, "configurations measured only in the baseline");
  list(v.only_in_candidate, "configurations measured only in this run");
  if (!v.only_in_baseline.empty() || !v.only_in_candidate.empty()) out += "\n";
}

void section_figures(const k3verdict::RunData& run, std::string& out) {
  out += "## Figures per model and op\n\n";
  std::map<std::pair<std::string, std::string>, std::vector<const k3verdict::CellFigures*>> groups;
  for (const auto& c : run.cells) groups[{c.model, c.op}].push_back(&c);
  for (const auto& [key, cells] : groups) {
    // The kernel layer goes into the heading when every cell of the group that ran (a failed
    // cell has none) ran the same one.
    std::string path;
    bool same = true;
    for (const k3verdict::CellFigures* c : cells) {
      if (c->path.empty()) continue;
      same = same && (path.empty() || c->path == path);
      path = c->path;
    }
    if (!same) path.clear();
    const bool path_in_heading = !path.empty() && path != "none";
    out += fmt::format("### {}{}{}\n\n", key.first.empty() ? "" : key.first + " / ", key.second,
                       path_in_heading ? " (" + path + ")" : "");
    const k3verdict::PerCall& pc = run.per_call;
    TextTable t({"cell", "P", std::string("mean ") + pc.unit(), std::string("95% CI ") + pc.unit(),
                 "CV", "GB/s", "GOPS", "err/bnd"},
                {L, R, R, R, R, R, R, R});
    std::vector<std::string> failed;
    for (const k3verdict::CellFigures* c : cells) {
      // The op is the heading: the row names the shape and parameters.
      const std::string rest =
          c->label.rfind(c->op + " ", 0) == 0 ? c->label.substr(c->op.size() + 1) : c->label;
      const std::string label = path_in_heading || c->path.empty() || c->path == "none"
                                    ? rest
                                    : rest + " (" + c->path + ")";
      if (!c->ok) {
        failed.push_back(c->label + ": " + c->reason);
        t.add({label, "-", "FAILED", "-", "-", "-", "-", "-"});
        continue;
      }
      const std::string ci =
          !(c->ci_low_ns && c->ci_high_ns) || pc.instructions
              ? pc.interval(c->ci_low_ns, c->ci_high_ns, c->processes, "..")
              : fmt::format("{:.2f}..{:.2f}", *c->ci_low_ns / 1e3, *c->ci_high_ns / 1e3);
      t.add({label, std::to_string(c->processes), pc.text(c->mean_ns), ci,
             c->cv_between ? fmt::format("{:.1f}%", 100 * *c->cv_between) : "-",
             pc.rate(c->bytes_per_call, c->mean_ns), pc.rate(c->ops_per_call, c->mean_ns),
             c->error_to_bound ? fmt::format("{:.2g}", *c->error_to_bound) : "-"});
    }
    out += t.markdown() + "\n";
    for (const auto& f : failed) out += wrap(f, kTextWidth, "- FAILED ", "  ");
    if (!failed.empty()) out += "\n";
  }
}

void section_trends(const Trends& t, std::string& out) {
  out += "## Trends\n\n";
  int changes = 0, distribution = 0;
  std::string lines;
  for (const auto& s : t.series) {
    for (const auto& c : s.change_points) {
      ++changes;
      const auto& p = s.points[c.index];
      lines += wrap(fmt::format("{}: {} from run {} ({}), p {:.2g}", s.label, pct(c.rel_change),
                                short_id(p.run_uuid), p.started_at, c.p_value),
                    kTextWidth, "- ", "  ");
    }
    for (const auto& c : s.distribution_changes) {
      ++distribution;
      const auto& p = s.points[c.index];
      lines += wrap(fmt::format("{}: distribution from run {} ({}): {}", s.label,
                                short_id(p.run_uuid), p.started_at, distribution_change_text(c)),
                    kTextWidth, "- ", "  ");
    }
  }
  out += wrap(fmt::format(
      "{} over {}; {}; {} of the distribution of process times.",
      plural(static_cast<int>(t.series.size()), "series", "series"), t.window,
      changes == 0 ? "no change point" : plural(changes, "change point", "change points"),
      distribution == 0 ? "no change" : plural(distribution, "change", "changes")));
  out += lines + "\n";
}

void section_roofline(const Roofline& r, std::string& out) {
  out += "## Roofline\n\n";
  if (!r.board.empty()) out += wrap(fmt::format("Board: {} ({}).", r.board, r.board_file));
  for (const auto& n : r.notes) out += wrap(n, kTextWidth, "- ", "  ");
  TextTable ceilings({"ceiling", "value", "origin"}, {L, R, L});
  for (const auto& c : r.ceilings)
    ceilings.add({c.name,
                  fmt::format("{:.1f} {}", c.value, c.kind == "bandwidth" ? "GB/s" : "GOPS"),
                  c.origin});
  if (!ceilings.empty()) out += "\n" + ceilings.markdown();
  const Ceiling* bw = nullptr;
  for (const auto& c : r.ceilings)
    if (c.kind == "bandwidth" && c.origin == "measured") bw = &c;
  if (bw != nullptr && !r.points.empty()) {
    const auto best =
        std::max_element(r.points.begin(), r.points.end(),
                         [](const auto& a, const auto& b) { return a.gbps < b.gbps; });
    out += "\n" + wrap(fmt::format(
                      "Highest bandwidth: {} at {:.2f} GB/s, {:.0f}% of {} ({:.2f} GB/s).",
                      best->label, best->gbps, 100 * best->gbps / bw->value, bw->name, bw->value));
  }
  out += "\n";
}

void section_tuning(const TuningData& t, std::string& out) {
  out += "## Tuning\n\n" + wrap(t.note + ".");
  for (const auto& h : t.heatmaps) {
    out += wrap(fmt::format("session {} {} {}: {} measured, {} rejected points over {}{}",
                            short_id(h.session_id), h.op, h.shape, h.measured, h.rejected, h.x_knob,
                            h.y_knob.empty() ? "" : " x " + h.y_knob),
                kTextWidth, "- ", "  ");
  }
  for (const auto& tt : t.tables) {
    std::string sessions;
    for (const auto& id : tt.sessions) sessions += (sessions.empty() ? "" : ", ") + short_id(id);
    out += "\n" + wrap(fmt::format("Table {} (sessions {}, {}{}):", short_id(tt.table_id),
                                   sessions.empty() ? "-" : sessions, tt.created_at,
                                   tt.path.empty() ? "" : ", " + tt.path));
    if (!tt.table.is_object() || !tt.table.contains("entries") || !tt.table["entries"].is_array()) {
      out += "- (not a readable tuning table)\n";
      continue;
    }
    TextTable e({"entry", "params", "mean", "speed-up [95% CI]"}, {L, L, R, R}, 1);
    for (const auto& entry : tt.table["entries"]) {
      const EntryEvidence ev = evidence_of(entry);
      std::string params;
      const auto p = entry.is_object() ? entry.value("params", nlohmann::json::object())
                                       : nlohmann::json::object();
      for (const auto& [k, v] : p.items())
        params += (params.empty() ? "" : ",") + k + "=" +
                  (v.is_string() ? v.get<std::string>() : v.dump());
      std::string speedup = ev.speedup ? fmt::format("{:.3f}", *ev.speedup) : "-";
      const std::string interval = speedup_interval_text(ev);
      if (ev.speedup && !interval.empty()) speedup += " " + interval;
      e.add({entry.is_object() ? entry.value("id", "?") : "?", params,
             evidence_value_text(ev, ev.mean), speedup});
    }
    out += e.markdown();
  }
  out += "\n";
}

void section_provenance(const Report& r, std::string& out) {
  out += "## Provenance\n\n";
  const auto& env = r.run.environment;
  std::string environment = fmt::format("cpu '{}', arch {}, marchid {}", r.run.cpu_model,
                                        r.run.arch.empty() ? "?" : r.run.arch,
                                        r.run.marchid.empty() ? "none" : r.run.marchid);
  if (env.is_object() && env.contains("vlenb") && env["vlenb"].is_number())
    environment += fmt::format(", VLEN {}", env["vlenb"].get<int>() * 8);
  if (env.is_object() && env.contains("kernel")) environment += ", " + env.value("kernel", "");
  out += wrap(environment, kTextWidth, "- ", "  ");
  for (const auto& b : r.run.builds) out += wrap("build " + build_line(b), kTextWidth, "- ", "  ");
  if (r.baseline)
    for (const auto& b : r.baseline->builds)
      out += wrap("baseline build " + build_line(b), kTextWidth, "- ", "  ");
  out += wrap(fmt::format("processes: {} ok, {} failed, {} disturbed (kept, not counted)",
                          r.run.processes_ok, r.run.processes_failed, r.run.processes_disturbed),
              kTextWidth, "- ", "  ");
  for (const auto& n : r.runner_notes) out += wrap(n, kTextWidth, "- ", "  ");
  out += wrap(fmt::format("report: {} at {} from {}; rules {}", r.generator, r.generated_at,
                          r.db_path, r.rules_file),
              kTextWidth, "- ", "  ");
}

}  // namespace

std::string verdict_headline(const k3verdict::Verdict& v) {
  int timing = 0, accuracy = 0, unconfirmed = 0;
  for (const auto& c : v.cells) {
    timing += c.timing_regression();
    accuracy += c.accuracy_regression();
    unconfirmed += c.timing.outcome == k3verdict::Outcome::kRegression && !c.timing_regression();
  }
  const int regressions = v.regressions();
  const bool counts = v.method == "exact-counts";
  std::string s =
      regressions == 0
          ? "clean, no regression"
          : fmt::format("{} ({} {}, {} accuracy)", plural(regressions, "REGRESSION", "REGRESSIONS"),
                        timing, counts ? "more instructions" : "slower", accuracy);
  s += fmt::format(", {}, {} {}", plural(v.improvements(), "improvement", "improvements"),
                   v.unchanged(), counts ? "identical" : "unchanged");
  if (unconfirmed > 0)
    s += fmt::format(", {} refuted", unconfirmed);  // slowdowns (Slower lists them)
  if (!v.failed.empty())
    s += ", " + plural(static_cast<int>(v.failed.size()), "failed cell", "failed cells");
  return s;
}

std::string verdict_markdown(const k3verdict::Verdict& v) {
  std::string out = "## Verdict: " + verdict_headline(v) + "\n\n";
  out += wrap(v.baseline_run == v.candidate_run
                  ? fmt::format("Candidate build {} against baseline build {}, both in run {}.",
                                short_id(v.candidate_build), short_id(v.baseline_build),
                                short_id(v.candidate_run))
                  : fmt::format("Candidate run {} (build {}) against baseline run {} (build {}).",
                                short_id(v.candidate_run), short_id(v.candidate_build),
                                short_id(v.baseline_run), short_id(v.baseline_build)));
  section_rules(v, out);
  section_regressions(v, out);
  section_improvements(v, out);
  section_unchanged(v, out);
  section_accuracy(v, out);
  section_failed(v, out);
  return out;
}

std::string summary_markdown(const Report& r) {
  std::string out = fmt::format("# k3tune report: run {}\n\n", short_id(r.run.run_uuid));
  out += wrap("run: " + run_line(r.run), kTextWidth, "- ", "  ");
  out += wrap("command: " + r.run.command, kTextWidth, "- ", "  ");
  if (r.baseline) out += wrap("baseline: " + run_line(*r.baseline), kTextWidth, "- ", "  ");
  out += "\n";
  if (r.verdict) {
    out += verdict_markdown(*r.verdict);
  } else {
    out += "## Verdict: none\n\n" + wrap(r.verdict_note + ".") + "\n";
    std::string failed;
    for (const auto& c : r.run.cells)
      if (!c.ok && c.build_hash == r.run.build_hash)
        failed += wrap(c.label + ": " + c.reason, kTextWidth, "- FAILED ", "  ");
    if (!failed.empty()) out += "### Failed cells\n\n" + failed + "\n";
  }
  section_figures(r.run, out);
  section_trends(r.trends, out);
  section_roofline(r.roofline, out);
  section_tuning(r.tuning, out);
  section_provenance(r, out);
  return out;
}

}  // namespace k3reports
