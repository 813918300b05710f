// Who holds a lease or a shared-queue claim: this controller's identity as it writes into the
// farm's rows (harness/host/store/farm_state.h), and whether a recorded holder still lives.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "harness/host/store/farm_state.h"

namespace k3farm {

// This process's identity for lease rows.
std::string this_host();
std::string process_start(std::int64_t pid);  // "" when the process does not exist
std::string this_actor();                     // "host:pid", who wrote a board event
// Whether the lease's holder process still exists (nullopt: it runs on another host).
std::optional<bool> holder_alive(const k3store::LeaseRow& row);

}  // namespace k3farm
