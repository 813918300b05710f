#include "apps/nightly/notify.h"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "harness/host/bench/user_error.h"
#include "harness/host/store/nightlies.h"
#include "harness/host/targets/process.h"
#include "harness/host/verdict/toml_input.h"
#include "harness/host/verdict/verdict_error.h"

namespace k3nightly {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

json read_json(const fs::path& p) {
  std::ifstream f(p);
  if (!f) return nullptr;
  json j = json::parse(f, nullptr, false);
  return j.is_discarded() ? json(nullptr) : j;
}

json member(const json& j, const char* key) {
  return j.is_object() && j.contains(key) ? j[key] : json(nullptr);
}

std::string text_of(const json& j) {
  return j.is_string() ? j.get<std::string>() : j.is_null() ? "" : j.dump();
}

// Confirmed: a timing regression whose verdict came from an interleaved measurement (the
// nightly's verdict benches measure both builds in the same rounds) or the report's
// re-measurement; an accuracy flag (a worse error bound or a changed checksum is no noise); a
// count regression (the exact rule). Suspected regressions (not-asked, unavailable) are not.
bool confirmed(const json& cell) {
  if (!member(cell, "regression").is_boolean() || !cell["regression"].get<bool>()) return false;
  const json acc = member(cell, "accuracy");
  if (member(acc, "ratio_flagged") == json(true) || member(acc, "checksum_flagged") == json(true))
    return true;
  const json timing = member(cell, "timing");
  const std::string by = text_of(member(timing, "confirmation"));
  return text_of(member(timing, "outcome")) == "regression" &&
         (by == "confirmed" || by == "interleaved");
}

// A regressed cell of a report: what changed, by how much, with the deciding test's interval.
json regressed_cell(const json& cell, const std::string& source) {
  const json timing = member(cell, "timing");
  const json speedup = member(timing, "speedup");
  json out = {{"source", source},
              {"label", member(cell, "label")},
              {"op", member(cell, "op")},
              {"shape", member(cell, "shape")},
              {"change", member(timing, "text")},
              {"confirmation", member(timing, "confirmation")},
              {"confirm_run", member(timing, "confirm_run")}};
  // The effect as the report gives it: baseline time / candidate time with its 95% interval,
  // and the same as a slowdown of the candidate (1 / speedup - 1; the interval's ends swap).
  const json value = member(speedup, "value"), ci = member(speedup, "ci95");
  if (value.is_number()) {
    json effect = {{"speedup", value}, {"speedup_ci95", ci}};
    const auto slowdown = [](const json& s) {
      return s.is_number() && s.get<double>() > 0 ? json(1.0 / s.get<double>() - 1.0)
                                                  : json(nullptr);
    };
    effect["slowdown"] = slowdown(value);
    if (ci.is_array() && ci.size() == 2)
      effect["slowdown_ci95"] = {slowdown(ci[1]), slowdown(ci[0])};
    if (const json test = member(timing, "test"); test.is_object())
      effect["p_value"] = member(test, "p_value");
    out["effect"] = effect;
  }
  if (const json exact = member(timing, "exact"); exact.is_object()) out["instructions"] = exact;
  const json acc = member(cell, "accuracy");
  out["accuracy_flagged"] =
      member(acc, "ratio_flagged") == json(true) || member(acc, "checksum_flagged") == json(true);
  return out;
}

void add_report_cells(json& cells, const fs::path& report, const std::string& source) {
  const json verdict = member(read_json(report), "verdict");
  for (const auto& cell : member(verdict, "cells").is_array() ? verdict["cells"] : json::array())
    if (confirmed(cell)) cells.push_back(regressed_cell(cell, source));
}

// Boards taken out tonight: the "quarantined" of every farm step's detail, and a deploy + probe
// that found a faulty board.
json board_faults(const NightFacts& n) {
  json boards = json::array();
  for (const auto& [step, detail] : n.details.items()) {
    const json q = member(detail, "quarantined");
    if (q.is_object())
      for (const auto& [board, why] : q.items())
        boards.push_back({{"board", board},
                          {"step", step},
                          {"fault", member(why, "fault")},
                          {"reason", why.is_object() ? member(why, "reason") : why}});
  }
  if (auto it = n.exit_codes.find("deploy-probe"); it != n.exit_codes.end() && it->second != 0)
    boards.push_back({{"board", nullptr},
                      {"step", "deploy-probe"},
                      {"fault", nullptr},
                      {"reason", fmt::format("a board failed deploy + probe (exit {}): see {}/logs/"
                                             "deploy-probe.log",
                                             it->second, n.dir)}});
  return boards;
}

std::string link(const std::string& base, const NightFacts& n, const std::string& file) {
  return base.empty() ? n.dir + "/" + file : base + "/" + n.id + "/" + file;
}

std::string percent(const json& v) {
  return v.is_number() ? fmt::format("{:+.1f}%", 100 * v.get<double>()) : "?";
}

std::string links_markdown(const json& p) {
  const json& l = p["links"];
  std::string md =
      fmt::format("\nReport: {} (summary: {})", text_of(l["report"]), text_of(l["summary"]));
  if (!l["site"].is_null()) md += fmt::format("; site: {}", text_of(l["site"]));
  return md + "\n";
}

std::string regression_markdown(const json& p) {
  std::string md = fmt::format("### k3tune nightly {}: confirmed regression\n\n{}\n\n",
                               p["night"]["id"].get<std::string>(), text_of(p["verdict"]));
  if (!p["regressed_cells"].empty()) {
    md +=
        "| cell | where | change | slowdown, 95% interval | confirmed by "
        "|\n|---|---|---|---|---|\n";
    for (const auto& c : p["regressed_cells"]) {
      const json e = member(c, "effect");
      const json ci = member(e, "slowdown_ci95");
      md +=
          fmt::format("| {} | {} | {} | {} | {} |\n", text_of(c["label"]), text_of(c["source"]),
                      text_of(c["change"]),
                      ci.is_array() ? fmt::format("{} .. {}", percent(ci[0]), percent(ci[1])) : "-",
                      c["accuracy_flagged"].get<bool>() ? "accuracy check"
                      : text_of(c["confirmation"]) == "interleaved"
                          ? "interleaved A/B"
                          : "re-measurement " + text_of(c["confirm_run"]));
    }
    md += "\n";
  }
  for (const auto& c : p["regressed_counts"])
    md += fmt::format("More instructions on the {} runner than nightly {} (exact rule): {}\n",
                      text_of(c["path"]), text_of(c["against"]), text_of(c["output"]));
  const json b = p["bisection"];
  if (!md.ends_with("\n\n")) md += "\n";
  if (!p["suspect_commit"].is_null())
    md += fmt::format("Suspect commit: `{}` (bisection {}, {}..{})\n", text_of(p["suspect_commit"]),
                      text_of(member(b, "bisection_id")), text_of(member(b, "good")),
                      text_of(member(b, "bad")));
  else if (b.is_object())
    md += fmt::format("Bisection {}: {} ({})\n", text_of(member(b, "bisection_id")),
                      text_of(member(b, "status")), text_of(member(b, "why")));
  else
    md += "Not bisected tonight.\n";
  return md + links_markdown(p);
}

std::string board_fault_markdown(const json& p) {
  std::string md = fmt::format(
      "### k3tune nightly {}: board fault (no confirmed regression)\n\n{}\n\nBoards taken out:\n\n",
      p["night"]["id"].get<std::string>(), text_of(p["verdict"]));
  for (const auto& b : p["boards"])
    md += fmt::format("- {} ({}): {}\n", b["board"].is_null() ? "a board" : text_of(b["board"]),
                      text_of(b["step"]), text_of(b["reason"]));
  return md + links_markdown(p);
}

}  // namespace

NotifyConfig load_notify_config(const std::string& path) {
  NotifyConfig c;
  try {
    const toml::table t = k3verdict::parse_toml_file(path);
    for (const auto& [key, node] : t) {
      const std::string k(key.str());
      if (k == "notify") {
        const auto* a = node.as_array();
        if (!a || a->empty())
          k3verdict::toml_fail(path, node, k, "expected [\"command\", args...]");
        for (const auto& arg : *a) c.command.push_back(k3verdict::toml_string(path, arg, k));
      } else if (k == "notify_timeout_s") {
        c.timeout_s = k3verdict::toml_number(path, node, k);
        if (!(c.timeout_s > 0)) k3verdict::toml_fail(path, node, k, "expected seconds > 0");
      } else if (k == "report_base_url") {
        c.report_base_url = k3verdict::toml_string(path, node, k);
      } else if (k == "site_url") {
        c.site_url = k3verdict::toml_string(path, node, k);
      } else {
        k3verdict::toml_fail(path, node, k,
                             "unknown key (notify, notify_timeout_s, report_base_url, site_url)");
      }
    }
  } catch (const k3verdict::VerdictError& e) {
    throw k3bench::UserError(e.what());
  }
  // A relative command path is the configuration file's neighbour; a bare name is looked up in
  // PATH.
  if (!c.command.empty() && c.command[0].find('/') != std::string::npos &&
      fs::path(c.command[0]).is_relative())
    c.command[0] = (fs::absolute(path).parent_path() / c.command[0]).lexically_normal().string();
  while (!c.report_base_url.empty() && c.report_base_url.back() == '/')
    c.report_base_url.pop_back();
  return c;
}

std::optional<Notice> night_notice(const NightFacts& n, const NotifyConfig& config) {
  json p = {{"night",
             {{"id", n.id},
              {"profile", n.profile},
              {"farm", n.farm},
              {"dir", n.dir},
              {"status", n.status},
              {"exit_code", n.exit_code}}},
            {"verdict", n.verdict},
            {"links",
             {{"report", link(config.report_base_url, n, "report.html")},
              {"summary", link(config.report_base_url, n, "summary.md")},
              {"site", config.site_url.empty() ? json(nullptr) : json(config.site_url)}}}};
  json cells = json::array(), counts = json::array();
  if (n.exit_code == 4) {
    add_report_cells(cells, fs::path(n.dir) / "report.json", "verdict");
    if (fs::exists(fs::path(n.dir) / "boards"))
      for (const auto& b : fs::directory_iterator(fs::path(n.dir) / "boards"))
        add_report_cells(cells, b.path() / "report.json", "board " + b.path().filename().string());
    for (const auto& [step, code] : n.exit_codes)
      if (step.rfind("count-verdict-", 0) == 0 && code == 4)
        counts.push_back({{"path", step.substr(std::string("count-verdict-").size())},
                          {"against", n.previous_counts_nightly},
                          {"output", n.dir + "/logs/" + step + ".out"}});
  }
  const json boards = board_faults(n);
  if (!cells.empty() || !counts.empty()) {
    p["kind"] = "regression";
    p["regressed_cells"] = cells;
    p["regressed_counts"] = counts;
    p["boards"] = boards;
    p["bisection"] = nullptr;
    p["suspect_commit"] = nullptr;
    if (n.exit_codes.count("bisect") > 0) {
      const json b = read_json(fs::path(n.dir) / "logs" / "bisect.json");
      if (b.is_object()) {
        p["bisection"] = {{"bisection_id", member(b, "bisection_id")},
                          {"status", member(b, "status")},
                          {"why", member(b, "why")},
                          {"good", member(b, "good")},
                          {"bad", member(b, "bad")},
                          {"candidates", member(b, "candidates")}};
        const json c = member(b, "candidates");
        if (c.is_array() && c.size() == 1) p["suspect_commit"] = c[0];
      }
    }
    return Notice{"regression", p, regression_markdown(p)};
  }
  if (!boards.empty()) {
    p["kind"] = "board_fault";
    p["boards"] = boards;
    return Notice{"board_fault", p, board_fault_markdown(p)};
  }
  return std::nullopt;
}

HookOutcome send_notice(const NotifyConfig& config, const Notice& notice, const std::string& dir) {
  HookOutcome o;
  const fs::path folder = fs::path(dir) / "notify";
  std::error_code ec;
  fs::create_directories(folder, ec);
  const std::string payload = (folder / "payload.json").string();
  const std::string summary = (folder / "summary.md").string();
  std::ofstream(payload) << notice.payload.dump(2) << "\n";
  std::ofstream(summary) << notice.markdown;
  std::vector<std::string> argv = config.command;
  argv.push_back(payload);
  argv.push_back(summary);
  const auto r =
      k3targets::run_process(argv, k3targets::ProcessOptions::with_timeout(config.timeout_s));
  o.wall_s = static_cast<double>(r.wall_ns) / 1e9;
  o.exit_code = r.exit_code;
  fs::create_directories(fs::path(dir) / "logs", ec);
  std::ofstream(fs::path(dir) / "logs" / "notify.log", std::ios::app)
      << fmt::format("$ {}\n", fmt::join(argv, " ")) << r.out << r.err;
  if (r.ok()) {
    o.status = "sent";
    o.line = fmt::format("notify: {} notice sent ({}: exit 0 in {:.1f} s)", notice.kind,
                         config.command[0], o.wall_s);
  } else {
    o.status = r.timed_out ? "timed-out" : "failed";
    o.line = fmt::format(
        "notify: the hook failed to send the {} notice: {} (log: {}/logs/notify.log; "
        "the night's exit code stands)",
        notice.kind, r.failure_reason(config.timeout_s), dir);
  }
  return o;
}

void notify_after_night(const NotifyConfig& config, const NightFacts& night,
                        k3store::Connection& db, int seq) {
  if (config.command.empty()) return;
  try {
    if (const auto earlier = k3store::find_step(db, night.id, "notify");
        earlier && earlier->status == "done") {
      fmt::print("notify: sent by an earlier attempt of this night\n");
      return;
    }
    const auto notice = night_notice(night, config);
    if (!notice) {
      fmt::print("notify: nothing to send (no confirmed regression, no board fault)\n");
      return;
    }
    k3store::begin_step(db, night.id, "notify", seq,
                        fmt::format("{} <payload> <summary>", fmt::join(config.command, " ")));
    const HookOutcome o = send_notice(config, *notice, night.dir);
    k3store::finish_step(db, night.id, "notify", o.status == "sent", o.exit_code, o.wall_s,
                         json{{"kind", notice->kind},
                              {"status", o.status},
                              {"exit_code", o.exit_code},
                              {"payload", night.dir + "/notify/payload.json"},
                              {"summary", night.dir + "/notify/summary.md"},
                              {"line", o.line}}
                             .dump());
    fmt::print("{}\n", o.line);
  } catch (const std::exception& e) {
    fmt::print("notify: not sent: {}\n", e.what());
  }
  std::fflush(stdout);
}

}  // namespace k3nightly
