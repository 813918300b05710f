// A Slurm task's share of its farm command's work: the worker options `bench` and `tune` read
// (--shard i/n, --cells, --sessions; harness/host/slurm runs the tasks). A share is one shell
// word list, written into the task's batch script and kept in the job journal in that form, so a
// resumed command reads back what an earlier one submitted.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "harness/host/launch/k3tune_request.h"

namespace k3launch {

// What a later round's positions count: a bench's cells or a campaign's sessions.
enum class ShareUnit { kCells, kSessions };

// The index-th of `count` equal parts of the work (1-based): "--shard 2/4".
std::string shard_share(std::size_t index, std::size_t count);
// The index and count of a shard share; nothing for any other share.
struct Shard {
  int index = 0, count = 0;
};
std::optional<Shard> shard_of(const std::string& share);
// These positions of the work only: "--cells 0,3", "--sessions 1".
std::string positions_share(ShareUnit unit, const std::vector<std::size_t>& positions);

// What follows the share on a task's command line: a task of a resumable command (bench) resumes
// what its requeued self measured.
Args task_tail(bool resume);

}  // namespace k3launch
