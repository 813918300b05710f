// Open files a controller needs for its farm. Each board costs the controller about
// kDescriptorsPerBoard descriptors at once (the lease holder's pipes, the pipes of the ssh command
// in flight, with room to spare; the database connection is the one writer's, not per board), so
// at 100+ boards the usual soft limit of 1024 is the first thing a controller runs out of -- and a
// controller out of descriptors must not read as boards that stopped answering.
#pragma once

#include <cstddef>
#include <string>

namespace k3farm {

constexpr std::size_t kDescriptorsPerBoard = 10;
// What the rest of the process may hold beside the boards (database, logs, stdio, catalogs).
constexpr std::size_t kDescriptorsReserve = 64;

struct OpenFileLimit {
  std::size_t soft = 0, hard = 0;  // RLIMIT_NOFILE after raise_open_file_limit()
};

// Raises this process's RLIMIT_NOFILE soft limit to its hard limit (done once at start: the
// limit is inherited by every ssh client and runner the process starts). Returns the limits.
OpenFileLimit raise_open_file_limit();

// Descriptors open in this process now (/proc/self/fd).
std::size_t open_descriptors();

// Throws std::invalid_argument naming RLIMIT_NOFILE when `boards` boards (about
// kDescriptorsPerBoard each, plus what is open now and the reserve) do not fit under the soft
// limit after raising it to the hard limit.
void require_descriptors_for(std::size_t boards);

}  // namespace k3farm
