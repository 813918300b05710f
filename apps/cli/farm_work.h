// What the commands that hand work to a farm's scheduler share: printing its outcome and relaying
// a command that ran as one job, each setting the exit code.
#pragma once

#include <optional>

#include "apps/scheduler/scheduler.h"

namespace k3cli {

// Prints the outcome (JSON or text), its problems on stderr, and sets the exit code by its status.
void report_work(const k3scheduler::WorkOutcome& outcome, bool json);

// With a job: prints its output and errors as the command's own, sets the exit code to the job's
// (1 with a line on stderr when the scheduler stopped answering) and returns true. Without one
// (the command runs here): false.
bool relay_job(const std::optional<k3scheduler::JobResult>& job);

}  // namespace k3cli
