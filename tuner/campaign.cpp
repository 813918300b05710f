#include "tuner/campaign.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <filesystem>
#include <map>
#include <mutex>
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

}  // namespace

bool CampaignOutcome::complete() const {
  for (const auto& g : groups)
    if (!g.unfinished.empty() || !g.outcome.table_problems.empty()) return false;
  return !groups.empty();
}

CampaignOutcome run_campaign(const std::string& root, const CampaignRequest& rq) {
  const auto start = Clock::now();
  CampaignOutcome out;
  std::mutex mu;  // the outcome, the queues and the notes
  std::condition_variable changed;  // a session finished, failed or came back
  auto note = [&](const std::string& line) {
    if (rq.note) rq.note(line);
  };
  auto db = k3store::open_for_writing(rq.command.db_path);
  k3farm::Farm farm(rq.farm, root, db.get(), k3farm::new_run_uuid());

  // Take every candidate board: lease, deploy, probe, and the runner's own facts.
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
    note(fmt::format("board {} not used: {}", name, why));
  }
  if (taken.empty()) {
    std::string all;
    for (const auto& [b, why] : out.not_used) all += fmt::format("{}{}: {}", all.empty() ? "" : "; ", b, why);
    throw k3bench::UserError(fmt::format("--farm {}: no board could be taken ({})", rq.farm.name, all));
  }

  // Groups in the order of their first board.
  std::vector<std::vector<TakenBoard*>> groups;
  for (auto& b : taken) {
    auto it = std::find_if(groups.begin(), groups.end(), [&](const auto& g) { return g.front()->group == b.group; });
    if (it == groups.end())
      groups.push_back({&b});
    else
      it->push_back(&b);
  }

  // The plan of each group: every job and its space, nothing measured (bad spaces or shapes are
  // refused here, before any session starts).
  struct GroupWork {
    TuneOutcome plan;
    std::deque<std::size_t> queue;  // jobs not yet taken
    std::map<std::size_t, std::size_t> position;  // job index -> session position
    std::size_t done = 0, running = 0;
  };
  std::vector<GroupWork> work(groups.size());
  out.groups.resize(groups.size());
  for (std::size_t gi = 0; gi < groups.size(); ++gi) {
    CampaignGroup& group = out.groups[gi];
    group.fingerprint = groups[gi].front()->facts.fingerprint.dump();
    for (const auto* b : groups[gi]) group.boards.push_back(b->name);
    TuneCommand plan_cmd = rq.command;
    plan_cmd.explain = true;
    plan_cmd.progress = nullptr;
    work[gi].plan = run_tune(*groups[gi].front()->target, plan_cmd);
    std::set<std::string> seen;  // jobs of one model that share a shape share their session
    const auto& jobs = work[gi].plan.jobs;
    std::vector<std::size_t> sessions;  // job index of each session, in session order
    for (std::size_t j = 0; j < jobs.size(); ++j)
      if (jobs[j].note.empty() && seen.insert(jobs[j].op + " " + jobs[j].shape.dump()).second)
        sessions.push_back(j);
    for (std::size_t i = 0; i < sessions.size(); ++i) {
      group.session_labels.push_back(session_label(jobs[sessions[i]]));
      work[gi].position[sessions[i]] = i;
    }
    for (const std::size_t i : k3farmbench::shard_positions(sessions.size(), rq.sessions))
      work[gi].queue.push_back(sessions[i]);
    if (rq.command.explain) group.outcome = work[gi].plan;
    else
      note(fmt::format("fingerprint group {} of {}: boards {}; {} sessions", gi + 1, groups.size(),
                       fmt::join(group.boards, ", "), work[gi].queue.size()));
  }
  if (rq.command.explain) {
    out.wall_s = std::chrono::duration<double>(Clock::now() - start).count();
    return out;
  }

  // One thread per board, all groups at once: each board takes its group's next session.
  std::vector<std::thread> threads;
  for (std::size_t gi = 0; gi < groups.size(); ++gi) {
    for (auto* b : groups[gi]) {
      threads.emplace_back([&, gi, b] {
        GroupWork& w = work[gi];
        CampaignGroup& group = out.groups[gi];
        for (;;) {
          std::size_t j;
          {
            // An idle board waits while others of its group still run: a lost board's session
            // comes back to the queue.
            std::unique_lock lock(mu);
            changed.wait(lock, [&] { return !w.queue.empty() || w.running == 0; });
            if (w.queue.empty()) return;
            j = w.queue.front();
            w.queue.pop_front();
            ++w.running;
          }
          const TuneJobOutcome& job = w.plan.jobs[j];
          try {
            const TuneOutcome one = run_tune(*b->target, session_command(rq.command, job));
            std::lock_guard lock(mu);
            changed.notify_all();
            --w.running;
            ++w.done;
            ++group.sessions_by[b->name];
            group.done_by[w.position.at(j)] = b->name;
            const auto& r = one.jobs.front().result;
            note(fmt::format("{}: {} done ({} measurements, {} new{}); group {}: sessions done {}, running {}, left {}",
                             b->name, session_label(job), r.measurements, r.new_measurements,
                             one.jobs.front().resumed ? ", resumed" : "", gi + 1, w.done, w.running,
                             w.queue.size()));
          } catch (const k3targets::TargetLost& e) {
            std::lock_guard lock(mu);
            changed.notify_all();
            --w.running;
            w.queue.push_front(j);  // another board of the group resumes it from the stored points
            group.lost[b->name] = e.what();
            note(fmt::format("{}: lost during {} ({}); the session goes back to the queue", b->name,
                             session_label(job), e.what()));
            return;
          } catch (const std::exception& e) {
            std::lock_guard lock(mu);
            changed.notify_all();
            --w.running;
            group.unfinished.push_back(fmt::format("{}: {}", session_label(job), e.what()));
            note(fmt::format("{}: {} failed: {}", b->name, session_label(job), e.what()));
          }
        }
      });
    }
  }
  for (auto& t : threads) t.join();
  for (const auto& [board, q] : farm.quarantined_boards())
    out.quarantined[board] = {k3farm::to_string(q.fault), q.reason};

  // Every session of a group finished: one pass over all of them (measuring nothing) writes its table.
  for (std::size_t gi = 0; gi < groups.size(); ++gi) {
    CampaignGroup& group = out.groups[gi];
    for (const std::size_t j : work[gi].queue)
      group.unfinished.push_back(
          fmt::format("{}: every board of its fingerprint was lost", session_label(work[gi].plan.jobs[j])));
    if (!group.unfinished.empty() || !rq.write_tables) continue;
    const TakenBoard* writer = nullptr;
    for (const auto* b : groups[gi])
      if (!group.lost.count(b->name) && writer == nullptr) writer = b;
    if (writer == nullptr) {  // the last board was lost after its last session
      group.unfinished.push_back("the table: every board of this fingerprint was lost");
      continue;
    }
    TuneCommand final_cmd = rq.command;
    final_cmd.progress = nullptr;
    final_cmd.out = group_out(rq.command.out, gi, writer->name);
    group.outcome = run_tune(*writer->target, final_cmd);
  }
  out.wall_s = std::chrono::duration<double>(Clock::now() - start).count();
  return out;
}

}  // namespace k3tuner
