#include "tuner/campaign.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "harness/host/bench/catalog.h"
#include "harness/host/bench/user_error.h"
#include "harness/host/farm/farm.h"
#include "harness/host/farm/lease.h"
#include "harness/host/farmbench/board_target.h"
#include "harness/host/store/database.h"

namespace k3tuner {
namespace {

using Clock = std::chrono::steady_clock;

struct TakenBoard {
  std::string name;
  std::unique_ptr<k3farmbench::JudgedBoardTarget> target;
  TargetFacts facts;
  std::string group;  // fingerprint + emulator, the key boards are grouped by
};

// The session of one job as a command of its own: the same identity (op, shape, space, strategy,
// build, fingerprint...) as in the whole command, so the final pass finds it finished.
TuneCommand session_command(const TuneCommand& c, const TuneJobOutcome& job) {
  TuneCommand s = c;
  s.model.clear();
  s.ops = {job.op};
  s.shapes = {k3bench::to_kv(job.shape)};
  s.write_table = false;
  s.out.clear();
  s.explain = false;
  s.progress = nullptr;
  return s;
}

std::string session_label(const TuneJobOutcome& j) {
  return fmt::format("{} {}{}", j.op, k3bench::to_kv(j.shape), j.role.empty() ? "" : " (" + j.role + ")");
}

// The table of the group whose first board is `board`: --out itself for the first group, with
// "-<board>" before its extension for the others.
std::string group_out(const std::string& out, std::size_t group, const std::string& board) {
  if (out.empty() || group == 0) return out;
  const std::filesystem::path p(out);
  return (p.parent_path() / (p.stem().string() + "-" + board + p.extension().string())).string();
}

void note(const CampaignRequest& rq, const std::string& line) {
  if (rq.note) rq.note(line);
}

// Take every candidate board: lease, deploy, probe, and the runner's own facts. A board that
// cannot be taken is named in out.not_used; when none can, the campaign is refused.
std::vector<TakenBoard> take_boards(k3farm::Farm& farm, const std::string& root,
                                    const CampaignRequest& rq, CampaignOutcome& out) {
  std::vector<TakenBoard> taken;
  for (const auto& name : rq.boards) {
    std::string why;
    try {
      farm.lease(name);
      if (farm.prepare(name)) {
        TakenBoard b{name, std::make_unique<k3farmbench::JudgedBoardTarget>(farm, name, root), {}, ""};
        b.facts = probe_target(*b.target);
        b.group = b.facts.fingerprint.dump() + " " + fmt::format("{}", fmt::join(b.target->emulator_prefix(), " "));
        taken.push_back(std::move(b));
        continue;
      }
      why = farm.quarantined_boards()[name].reason;
    } catch (const k3farm::LeaseError& e) {
      why = e.what();
    } catch (const k3farm::BoardError& e) {
      why = e.what();
    } catch (const k3bench::UserError& e) {  // its runner could not describe itself
      why = e.what();
    }
    out.not_used[name] = why;
    note(rq, fmt::format("board {} not used: {}", name, why));
  }
  if (taken.empty()) {
    std::string all;
    for (const auto& [b, why] : out.not_used) all += fmt::format("{}{}: {}", all.empty() ? "" : "; ", b, why);
    throw k3bench::UserError(fmt::format("--farm {}: no board could be taken ({})", rq.farm.name, all));
  }
  return taken;
}

// The boards grouped by fingerprint (and emulator), groups in the order of their first board.
std::vector<std::vector<TakenBoard*>> fingerprint_groups(std::vector<TakenBoard>& taken) {
  std::vector<std::vector<TakenBoard*>> groups;
  for (auto& b : taken) {
    auto it = std::find_if(groups.begin(), groups.end(), [&](const auto& g) { return g.front()->group == b.group; });
    if (it == groups.end())
      groups.push_back({&b});
    else
      it->push_back(&b);
  }
  return groups;
}

struct GroupWork {
  TuneOutcome plan;
  std::deque<std::size_t> queue;                // jobs not yet taken
  std::map<std::size_t, std::size_t> position;  // job index -> session position
  std::size_t done = 0, running = 0;
};

// The plan of a group: every job and its space, nothing measured (bad spaces or shapes are
// refused here, before any session starts); one session per op and shape, this request's share of
// them queued.
GroupWork plan_group(const std::vector<TakenBoard*>& boards, const CampaignRequest& rq,
                     CampaignGroup& group) {
  GroupWork work;
  group.fingerprint = boards.front()->facts.fingerprint.dump();
  for (const auto* b : boards) group.boards.push_back(b->name);
  TuneCommand plan_cmd = rq.command;
  plan_cmd.explain = true;
  plan_cmd.progress = nullptr;
  work.plan = run_tune(*boards.front()->target, plan_cmd);
  std::set<std::string> seen;  // jobs of one model that share a shape share their session
  const auto& jobs = work.plan.jobs;
  std::vector<std::size_t> sessions;  // job index of each session, in session order
  for (std::size_t j = 0; j < jobs.size(); ++j)
    if (jobs[j].note.empty() && seen.insert(jobs[j].op + " " + jobs[j].shape.dump()).second)
      sessions.push_back(j);
  for (std::size_t i = 0; i < sessions.size(); ++i) {
    group.session_labels.push_back(session_label(jobs[sessions[i]]));
    work.position[sessions[i]] = i;
  }
  for (const std::size_t i : k3farmbench::shard_positions(sessions.size(), rq.sessions))
    work.queue.push_back(sessions[i]);
  return work;
}

// The sessions handed out to the boards: one thread per board, all groups at once, each board
// taking its group's next session. The queues, the outcome and the notes share one mutex.
class SessionDispatch {
 public:
  SessionDispatch(const CampaignRequest& rq, std::vector<GroupWork>& work, CampaignOutcome& out)
      : rq_(rq), work_(work), out_(out) {}

  void run(const std::vector<std::vector<TakenBoard*>>& groups) {
    std::vector<std::thread> threads;
    for (std::size_t gi = 0; gi < groups.size(); ++gi)
      for (const auto* b : groups[gi])
        threads.emplace_back([this, gi, b] { tune_sessions(gi, *b); });
    for (auto& t : threads) t.join();
  }

 private:
  // The group's next session, none when the queue is empty and no board of the group still runs
  // one. An idle board waits while others of its group still run: a lost board's session comes
  // back to the queue.
  std::optional<std::size_t> take(GroupWork& w) {
    std::unique_lock lock(mu_);
    changed_.wait(lock, [&] { return !w.queue.empty() || w.running == 0; });
    if (w.queue.empty()) return std::nullopt;
    const std::size_t j = w.queue.front();
    w.queue.pop_front();
    ++w.running;
    return j;
  }

  void tune_sessions(std::size_t gi, const TakenBoard& b) {
    GroupWork& w = work_[gi];
    CampaignGroup& group = out_.groups[gi];
    while (const std::optional<std::size_t> j = take(w)) {
      const TuneJobOutcome& job = w.plan.jobs[*j];
      try {
        const TuneOutcome one = run_tune(*b.target, session_command(rq_.command, job));
        std::lock_guard lock(mu_);
        changed_.notify_all();
        --w.running;
        ++w.done;
        ++group.sessions_by[b.name];
        group.done_by[w.position.at(*j)] = b.name;
        const auto& r = one.jobs.front().result;
        note(rq_, fmt::format("{}: {} done ({} measurements, {} new{}); group {}: sessions done "
                              "{}, running {}, left {}",
                              b.name, session_label(job), r.measurements, r.new_measurements,
                              one.jobs.front().resumed ? ", resumed" : "", gi + 1, w.done,
                              w.running, w.queue.size()));
      } catch (const k3targets::TargetLost& e) {
        std::lock_guard lock(mu_);
        changed_.notify_all();
        --w.running;
        w.queue.push_front(*j);  // another board of the group resumes it from the stored points
        group.lost[b.name] = e.what();
        note(rq_, fmt::format("{}: lost during {} ({}); the session goes back to the queue", b.name,
                              session_label(job), e.what()));
        return;
      } catch (const std::exception& e) {
        std::lock_guard lock(mu_);
        changed_.notify_all();
        --w.running;
        group.unfinished.push_back(fmt::format("{}: {}", session_label(job), e.what()));
        note(rq_, fmt::format("{}: {} failed: {}", b.name, session_label(job), e.what()));
      }
    }
  }

  const CampaignRequest& rq_;
  std::vector<GroupWork>& work_;
  CampaignOutcome& out_;
  std::mutex mu_;
  std::condition_variable changed_;  // a session finished, failed or came back
};

// Every session of a group finished: one pass over all of them (measuring nothing) on a board of
// the group that is still there writes its table.
void write_group_table(const CampaignRequest& rq, std::size_t gi,
                       const std::vector<TakenBoard*>& boards, const GroupWork& w,
                       CampaignGroup& group) {
  for (const std::size_t j : w.queue)
    group.unfinished.push_back(
        fmt::format("{}: every board of its fingerprint was lost", session_label(w.plan.jobs[j])));
  if (!group.unfinished.empty() || !rq.write_tables) return;
  const TakenBoard* writer = nullptr;
  for (const auto* b : boards)
    if (!group.lost.count(b->name) && writer == nullptr) writer = b;
  if (writer == nullptr) {  // the last board was lost after its last session
    group.unfinished.push_back("the table: every board of this fingerprint was lost");
    return;
  }
  TuneCommand final_cmd = rq.command;
  final_cmd.progress = nullptr;
  final_cmd.out = group_out(rq.command.out, gi, writer->name);
  group.outcome = run_tune(*writer->target, final_cmd);
}

}  // namespace

bool CampaignOutcome::complete() const {
  for (const auto& g : groups)
    if (!g.unfinished.empty() || !g.outcome.table_problems.empty()) return false;
  return !groups.empty();
}

CampaignOutcome run_campaign(const std::string& root, const CampaignRequest& rq) {
  const auto start = Clock::now();
  CampaignOutcome out;
  auto db = k3store::open_for_writing(rq.command.db_path);
  k3farm::Farm farm(rq.farm, root, db.get(), k3farm::new_run_uuid());
  std::vector<TakenBoard> taken = take_boards(farm, root, rq, out);
  const std::vector<std::vector<TakenBoard*>> groups = fingerprint_groups(taken);
  std::vector<GroupWork> work;
  out.groups.resize(groups.size());
  for (std::size_t gi = 0; gi < groups.size(); ++gi) {
    work.push_back(plan_group(groups[gi], rq, out.groups[gi]));
    if (rq.command.explain)
      out.groups[gi].outcome = work[gi].plan;
    else
      note(rq,
           fmt::format("fingerprint group {} of {}: boards {}; {} sessions", gi + 1, groups.size(),
                       fmt::join(out.groups[gi].boards, ", "), work[gi].queue.size()));
  }
  if (rq.command.explain) {
    out.wall_s = std::chrono::duration<double>(Clock::now() - start).count();
    return out;
  }
  SessionDispatch(rq, work, out).run(groups);
  for (const auto& [board, q] : farm.quarantined_boards())
    out.quarantined[board] = {k3farm::to_string(q.fault), q.reason};
  for (std::size_t gi = 0; gi < groups.size(); ++gi)
    write_group_table(rq, gi, groups[gi], work[gi], out.groups[gi]);
  out.wall_s = std::chrono::duration<double>(Clock::now() - start).count();
  return out;
}

}  // namespace k3tuner
