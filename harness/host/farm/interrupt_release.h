// Ctrl-C (or a SIGTERM) during a farm command must not leave the farm blocked until somebody runs
// `k3tune farm release --stale`: the first lease a process takes arms a handler that, on SIGINT or
// SIGTERM, deletes that process's own lease rows (same host and pid) and exits 128 + the signal.
// The board-side lock holders end by themselves when our pipes close. A thread that blocks these
// signals and waits for them itself (`k3tune farm lease --hold`) is unaffected: threads started
// after the block inherit it, so the handler's thread never sees the signal.
#pragma once

#include <string>

namespace k3farm {

// Idempotent; `db_path`: the database holding this process's lease rows.
void release_leases_on_interrupt(const std::string& db_path);

}  // namespace k3farm
