#include "harness/host/farmbench/shared_queue.h"

#include <unistd.h>

#include <fmt/format.h>

#include "harness/host/farm/holder.h"

namespace k3farmbench {

bool claim_cell(k3store::Connection& c, const std::string& queue_key, int cell_index,
                const std::string& sweep_uuid, std::string* holder) {
  const k3store::QueueClaimRow mine{queue_key,  cell_index,
                                    sweep_uuid, k3farm::this_host(),
                                    getpid(),   k3farm::process_start(getpid()),
                                    "taken"};
  const auto out = k3store::claim_queue_cell(c, mine, [](const k3store::QueueClaimRow& other) {
    k3store::LeaseRow who;  // the claim's holder, judged like a lease's
    who.holder_host = other.holder_host;
    who.holder_pid = other.holder_pid;
    who.holder_start = other.holder_start;
    return other.state != "done" && k3farm::holder_alive(who) == std::optional<bool>(false);
  });
  if (out.other && holder != nullptr)
    *holder =
        fmt::format("{} by sweep {} ({} pid {})", out.other->state == "done" ? "measured" : "taken",
                    out.other->sweep_uuid, out.other->holder_host, out.other->holder_pid);
  return out.taken;
}

}  // namespace k3farmbench
