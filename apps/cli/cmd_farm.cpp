// `k3tune farm list|probe|lease|release`: the board farm by hand. Thin: parse, call k3::farm,
// print. Leases are recovered only explicitly: `release --stale` removes leases whose holder is
// gone. Quarantines outlive their run: `list` shows them, `release --board B` lifts them.
#include <signal.h>
#include <sys/stat.h>

#include <ctime>
#include <iostream>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "apps/cli/app_context.h"
#include "harness/host/farm/farm.h"
#include "harness/host/farm/holder.h"
#include "harness/host/store/database.h"
#include "harness/host/store/results.h"

namespace k3cli {
namespace {

struct FarmArgs {
  std::string farm;                 // file, "local", or "" (default choice)
  std::vector<std::string> boards;  // empty: all
  std::vector<std::string> tags;
  double hold_s = 0;
  double lease_wait_s = 0;
  bool stale = false;
};

k3farm::FarmConfig load(const AppContext& ctx, const FarmArgs& a) {
  try {
    return k3farm::Farm::load(a.farm, ctx.root);
  } catch (const std::runtime_error& e) {
    throw k3bench::UserError(e.what());
  }
}

std::vector<std::string> chosen(const k3farm::FarmConfig& farm, const FarmArgs& a) {
  try {
    return k3farm::select_boards(farm, a.boards, a.tags);
  } catch (const std::invalid_argument& e) {
    throw k3bench::UserError(e.what());
  }
}

bool db_exists(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0 && st.st_size > 0;
}

nlohmann::json lease_json(const k3farm::LeaseState& s) {
  return {{"holder_host", s.row.holder_host},
          {"holder_pid", s.row.holder_pid},
          {"run_uuid", s.row.run_uuid},
          {"acquired_at", s.row.acquired_at},
          {"stale", s.stale},
          {"why", s.why}};
}

nlohmann::json state_json(const k3store::BoardEventRow& e) {
  return {{"event", k3store::to_string(e.event)},
          {"at", e.at},
          {"fault", e.fault},
          {"reason", e.reason},
          {"run_uuid", e.run_uuid},
          {"actor", e.actor},
          {"quarantined", e.quarantined()}};
}

nlohmann::json event_json(const k3store::BoardEventRow& e) {
  return {{"event", k3store::to_string(e.event)},
          {"at", e.at},
          {"fault", e.fault},
          {"reason", e.reason},
          {"run_uuid", e.run_uuid}};
}

// "2026-12-06T10:00:00.000000Z" of 24 hours ago: the board events `list` shows.
std::string day_ago_utc() {
  return k3store::utc_us_at(std::time(nullptr) - 24 * 3600);
}

// The scheduler's view of a board: "slurm drained since ... by root: k3tune: unreachable: ...;
// jobs 12_0 (alice)".
void print_scheduler_view(const std::string& scheduler, const nlohmann::json& v) {
  if (v.contains("error")) {
    fmt::print("  {:<16} {}: {}\n", "", scheduler, v["error"].get<std::string>());
    return;
  }
  std::string line = scheduler + " " + v["state"].get<std::string>();
  if (!v["reason"].get<std::string>().empty())
    line += fmt::format(" since {} by {}: {}", v["reason_at"].get<std::string>(),
                        v["reason_user"].get<std::string>(), v["reason"].get<std::string>());
  const auto jobs = v["jobs"].get<std::vector<std::string>>();
  line += jobs.empty() ? "; no job" : fmt::format("; jobs {}", fmt::join(jobs, ", "));
  fmt::print("  {:<16} {}\n", "", line);
}

void list(const AppContext& ctx, const FarmArgs& a) {
  const auto cfg = load(ctx, a);
  const auto names = chosen(cfg, a);
  std::map<std::string, k3store::LeaseRow> rows;
  std::map<std::string, k3store::BoardEventRow> states;
  std::map<std::string, nlohmann::json> events;  // board -> its events of the last 24 hours
  if (db_exists(ctx.db_path())) {
    auto db = k3store::open_database(ctx.db_path(), k3store::OpenMode::kReadOnly);
    for (auto& r : k3store::lease_rows(*db)) rows[r.board] = r;
    states = k3store::board_states(*db, cfg.name);
    for (auto& e : k3store::board_events(*db, cfg.name, day_ago_utc()))
      events[e.board].push_back(event_json(e));
  }
  k3farm::Farm farm(cfg, ctx.root, nullptr, "");
  // The scheduler's view next to k3tune's own state.
  const auto scheduler = k3scheduler::scheduler_for(cfg, ctx.caller());
  auto views = scheduler->board_views(names);
  nlohmann::json out = nlohmann::json::array();
  for (const auto& name : names) {
    const auto& b = farm.board(name);
    nlohmann::json j = {{"board", name},
                        {"kind", k3targets::to_string(b.config().kind)},
                        {"where", b.transport().describe()},
                        {"work_dir", b.config().work_dir},
                        {"cpus", b.config().cpus_text},
                        {"tags", b.config().tags},
                        {"exec_prefix", b.config().exec_prefix},
                        {"runner", b.local_runner(ctx.root)},
                        {"lease", nullptr},
                        {"quarantine_until", b.config().quarantine_until},
                        {"state", nullptr},
                        {"events", events.count(name) ? events[name] : nlohmann::json::array()}};
    if (const auto& pdu = b.config().pdu)
      j["pdu"] = {{"daemon", pdu->daemon},
                  {"name", pdu->name},
                  {"outlet", pdu->outlet},
                  {"power_attempts_per_day", b.config().power_attempts_per_day}};
    if (auto it = rows.find(name); it != rows.end())
      j["lease"] = lease_json(k3farm::judge_lease(it->second, &b));
    if (auto it = states.find(name); it != states.end()) j["state"] = state_json(it->second);
    if (views.count(name)) j[scheduler->name()] = views[name];
    out.push_back(j);
  }
  if (ctx.json) {
    std::cout << nlohmann::json{{"farm", cfg.name}, {"source", cfg.source}, {"boards", out}}.dump(2)
              << "\n";
    return;
  }
  fmt::print("farm {} ({})\n", cfg.name, cfg.source);
  for (const auto& j : out) {
    std::string lease = "free";
    if (!j["lease"].is_null()) {
      const auto& l = j["lease"];
      lease =
          l["stale"].get<bool>()
              ? fmt::format("STALE lease of {} pid {} ({}): k3tune farm release --stale",
                            l["holder_host"].get<std::string>(), l["holder_pid"].get<long long>(),
                            l["why"].get<std::string>())
              : fmt::format("leased by {} pid {} since {}", l["holder_host"].get<std::string>(),
                            l["holder_pid"].get<long long>(), l["acquired_at"].get<std::string>());
    }
    fmt::print("  {:<16} {:<6} {:<28} tags {:<18} {}\n", j["board"].get<std::string>(),
               j["kind"].get<std::string>(), j["where"].get<std::string>(),
               fmt::format("{}", fmt::join(j["tags"].get<std::vector<std::string>>(), ",")), lease);
    if (j.contains(scheduler->name()))
      print_scheduler_view(scheduler->name(), j[scheduler->name()]);
    const auto& st = j["state"];
    if (!st.is_null() && st["quarantined"].get<bool>())
      fmt::print("  {:<16} QUARANTINED since {} ({}, run {}): {}; until {}\n", "",
                 st["at"].get<std::string>(), st["fault"].get<std::string>(),
                 st["run_uuid"].get<std::string>(), st["reason"].get<std::string>(),
                 j["quarantine_until"] == "healthy"
                     ? "a run probes it healthy, or k3tune farm release --board " +
                           j["board"].get<std::string>()
                     : "k3tune farm release --board " + j["board"].get<std::string>());
    else if (!st.is_null())
      fmt::print("  {:<16} {} {} by {}: {}\n", "", st["event"].get<std::string>(),
                 st["at"].get<std::string>(), st["actor"].get<std::string>(),
                 st["reason"].get<std::string>());
    if (j.contains("pdu"))
      fmt::print("  {:<16} PDU {} outlet {} via {}, {} power cycles a day\n", "",
                 j["pdu"]["name"].get<std::string>(), j["pdu"]["outlet"].get<int>(),
                 j["pdu"]["daemon"].get<std::string>(),
                 j["pdu"]["power_attempts_per_day"].get<int>());
    for (const auto& e : j["events"])
      fmt::print("  {:<16}   {} {:<15} {}\n", "", e["at"].get<std::string>().substr(0, 19),
                 e["event"].get<std::string>(), e["reason"].get<std::string>());
  }
}

void probe(const AppContext& ctx, const FarmArgs& a) {
  const auto cfg = load(ctx, a);
  const auto names = chosen(cfg, a);
  auto db = k3store::open_for_writing(ctx.db_path());
  k3farm::Farm farm(cfg, ctx.root, db.get(), k3farm::new_run_uuid());
  nlohmann::json out = nlohmann::json::array();
  bool all_ok = true;
  for (const auto& name : names) {
    const bool ok = farm.prepare(name);
    all_ok = all_ok && ok;
    nlohmann::json j = {{"board", name}, {"ok", ok}};
    const auto& deployed = farm.board(name).deployed();
    if (deployed)
      j["deploy"] = {{"remote_path", deployed->remote_path},
                     {"copied", deployed->copied},
                     {"why", deployed->why}};
    const auto q = farm.quarantined_boards();
    if (auto it = q.find(name); it != q.end())
      j["quarantine"] = {{"fault", k3farm::to_string(it->second.fault)},
                         {"reason", it->second.reason}};
    out.push_back(j);
  }
  // The last probe of each board is in farm_probes; print it from there so JSON and text agree.
  std::map<std::string, nlohmann::json> probes;
  for (const auto& p : k3store::probe_rows(*db, farm.run_uuid()))
    probes[p.board] = nlohmann::json::parse(p.probe_json);
  for (auto& j : out)
    if (probes.count(j["board"])) j["probe"] = probes[j["board"]];
  if (ctx.json) {
    std::cout << nlohmann::json{{"run_uuid", farm.run_uuid()}, {"boards", out}}.dump(2) << "\n";
  } else {
    for (const auto& j : out) {
      const std::string name = j["board"];
      if (!j["ok"].get<bool>()) {
        fmt::print("{}: QUARANTINED ({}): {}\n", name, j["quarantine"]["fault"].get<std::string>(),
                   j["quarantine"]["reason"].get<std::string>());
        continue;
      }
      const auto& p = j["probe"];
      fmt::print(
          "{}: ok; runner {} ({}); uptime {} s, load {}, MemAvailable {} MiB, marchid {}, "
          "vlenb {}, TCM {}\n",
          name, j["deploy"]["copied"].get<bool>() ? "copied" : "present",
          j["deploy"]["why"].get<std::string>(), p["uptime_s"].get<long long>(),
          p["loadavg"][0].get<double>(), p["mem_available_kb"].get<long long>() / 1024,
          p["marchid"].get<std::string>().empty() ? "-" : p["marchid"].get<std::string>(),
          p["vlenb"].dump(), p["tcm_backend"].get<std::string>());
      for (const auto& w : p["warnings"]) fmt::print("  warning: {}\n", w.get<std::string>());
    }
  }
  if (!all_ok) exit_code() = kProblems;
}

void lease(const AppContext& ctx, const FarmArgs& a) {
  const auto cfg = load(ctx, a);
  if (a.boards.empty()) throw k3bench::UserError("--board: name the boards to lease");
  const auto names = chosen(cfg, a);
  auto db = k3store::open_for_writing(ctx.db_path());
  k3farm::Farm farm(cfg, ctx.root, db.get(), k3farm::new_run_uuid());
  // Block the signals first so that a SIGTERM arriving while we lease is waited for, not fatal.
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGHUP);
  sigprocmask(SIG_BLOCK, &set, nullptr);
  for (const auto& name : names) {
    try {
      k3farm::LeaseWait wait;
      wait.max_s = a.lease_wait_s;
      wait.on_waiting = [](const std::string& why) { fmt::print(stderr, "k3tune: {}\n", why); };
      farm.lease(name, wait);
    } catch (const k3farm::LeaseError& e) {
      throw k3bench::UserError(e.what());  // ~Farm releases what was leased so far
    } catch (const k3farm::BoardError& e) {
      throw k3bench::UserError(e.what());
    }
    fmt::print("leased {}\n", name);
  }
  std::fflush(stdout);
  timespec wait{static_cast<time_t>(a.hold_s), 0};
  if (a.hold_s > 0)
    sigtimedwait(&set, nullptr, &wait);
  else
    sigwaitinfo(&set, nullptr);
  for (const auto& name : names) {
    farm.release(name);
    fmt::print("released {}\n", name);
  }
}

// `release --board B`: lifts the standing quarantine of each named board (all of them must be
// quarantined: otherwise nothing is written).
void lift_quarantines(const AppContext& ctx, const FarmArgs& a) {
  const auto cfg = load(ctx, a);
  const auto names = chosen(cfg, a);
  std::map<std::string, k3store::BoardEventRow> states;
  std::unique_ptr<k3store::Connection> db;
  if (db_exists(ctx.db_path())) {
    db = k3store::open_for_writing(ctx.db_path());
    states = k3store::board_states(*db, cfg.name);
  }
  // A board may also (or only) be held out by the scheduler for k3tune's fault (a Slurm drain):
  // brought back here.
  const auto scheduler = k3scheduler::scheduler_for(cfg, ctx.caller());
  auto views = scheduler->board_views(names);
  const auto drained = [&](const std::string& name) {
    return views.count(name) && scheduler->holds_out(views[name]);
  };
  for (const auto& name : names)
    if ((!states.count(name) || !states[name].quarantined()) && !drained(name))
      throw k3bench::UserError(
          fmt::format("--board {}: not quarantined in {} (a stale lease is recovered with --stale)",
                      name, ctx.db_path()));
  nlohmann::json out = nlohmann::json::array();
  for (const auto& name : names) {
    if (drained(name)) {
      std::string done;
      try {
        done = scheduler->bring_back(name, views[name]);
      } catch (const std::runtime_error& e) {
        throw k3bench::UserError(fmt::format("--board {}: {} would not bring it back: {}", name,
                                             scheduler->name(), e.what()));
      }
      if (!ctx.json) fmt::print("board {}: {}\n", name, done);
    }
    if (!states.count(name) || !states[name].quarantined()) {
      out.push_back({{"board", name}, {"resumed", views[name]}});
      continue;
    }
    const auto& q = states[name];
    k3store::insert_board_event(
        *db, {cfg.name, name, k3store::now_utc_us(), k3store::BoardEvent::kReleased, "",
              fmt::format("quarantine of {} lifted by hand ({}: {})", q.at, q.fault, q.reason), "",
              k3farm::this_actor()});
    out.push_back({{"board", name}, {"released", state_json(q)}});
    if (!ctx.json)
      fmt::print("board {}: quarantine of {} ({}: {}) lifted\n", name, q.at, q.fault, q.reason);
  }
  if (ctx.json) std::cout << out.dump(2) << "\n";
}

void release(const AppContext& ctx, const FarmArgs& a) {
  if (!a.stale && a.boards.empty())
    throw k3bench::UserError(
        "release: --board B lifts that board's quarantine, --stale recovers leases whose holder "
        "is gone; a live lease is released by stopping its holder");
  if (!a.stale) return lift_quarantines(ctx, a);
  const auto cfg = load(ctx, a);
  const auto names = chosen(cfg, a);
  if (!db_exists(ctx.db_path())) {
    fmt::print("no stale leases (no database at {})\n", ctx.db_path());
    return;
  }
  auto db = k3store::open_for_writing(ctx.db_path());
  k3farm::Farm farm(cfg, ctx.root, nullptr, "");
  nlohmann::json out = nlohmann::json::array();
  for (const auto& row : k3store::lease_rows(*db)) {
    if (std::find(names.begin(), names.end(), row.board) == names.end()) continue;
    const k3farm::Board* b = cfg.find(row.board) ? &farm.board(row.board) : nullptr;
    const auto st = k3farm::judge_lease(row, b);
    if (!st.stale) {
      out.push_back({{"board", row.board}, {"action", "kept: live lease"}});
      continue;
    }
    out.push_back({{"board", row.board}, {"action", k3farm::recover_stale_lease(*db, row, b)}});
  }
  if (ctx.json) {
    std::cout << out.dump(2) << "\n";
    return;
  }
  if (out.empty()) fmt::print("no stale leases\n");
  for (const auto& j : out)
    fmt::print("{}\n", j["action"].get<std::string>().rfind("kept", 0) == 0
                           ? fmt::format("board {}: {}", j["board"].get<std::string>(),
                                         j["action"].get<std::string>())
                           : j["action"].get<std::string>());
}

}  // namespace

void add_farm_command(CLI::App& app, AppContext& ctx) {
  auto a = std::make_shared<FarmArgs>();
  auto* farm = app.add_subcommand(
      "farm", "board farm: list boards and leases, probe health, lease, recover stale leases");
  farm->require_subcommand(1);
  farm->add_option("--farm", a->farm,
                   "farm file, or 'local' (built-in: host + qemu-user boards); default: "
                   "$K3TUNE_FARM, else <root>/configs/farm.toml, else local");
  auto* ls = farm->add_subcommand(
      "list", "boards, where they are, who holds each lease, and standing quarantines");
  auto* pr = farm->add_subcommand("probe",
                                  "deploy the runner and probe health (uptime, load, "
                                  "memory, thermal, cpufreq, marchid, vlenb, TCM)");
  auto* le = farm->add_subcommand("lease",
                                  "take exclusive leases and hold them until a signal "
                                  "(or --hold seconds)");
  auto* re = farm->add_subcommand(
      "release",
      "lift a board's standing quarantine (--board B), or recover stale leases (--stale)");
  farm->fallthrough();  // global options (--json, --db) may follow the subcommands too
  for (auto* cmd : {ls, pr, le, re}) {
    cmd->fallthrough();
    cmd->add_option("--board", a->boards, "board name (repeatable; default: all)");
    cmd->add_option("--tag", a->tags, "only boards with this tag (repeatable)");
  }
  le->add_option("--hold", a->hold_s, "seconds to hold (0: until SIGINT/SIGTERM)")
      ->check(CLI::Range(0.0, 1e7));
  le->add_option("--lease-wait", a->lease_wait_s,
                 "seconds to wait for a board another controller holds (default 0: refuse)")
      ->check(CLI::Range(0.0, 1e6));
  re->add_flag("--stale", a->stale,
               "remove leases whose holder process is gone (without it: lift the quarantine of "
               "the --board boards)");
  ls->callback([&ctx, a] { list(ctx, *a); });
  pr->callback([&ctx, a] { probe(ctx, *a); });
  le->callback([&ctx, a] { lease(ctx, *a); });
  re->callback([&ctx, a] { release(ctx, *a); });
}

}  // namespace k3cli
