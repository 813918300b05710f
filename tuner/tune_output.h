// What a tuning job's outcome looks like to its reader: the JSON object `tune --json` prints per
// job (the nightly and a Slurm campaign's controller read it) and the lines `tune` prints. Shared
// by `tune` on a target and by every scheduler's campaign on a farm.
#pragma once

#include <nlohmann/json.hpp>

#include "tuner/tune_command.h"

namespace k3tuner {

nlohmann::json job_json(const TuneJobOutcome& j);
// The space's size and, unless `explain`, the measurements, the choice and its evidence.
void print_job(const TuneJobOutcome& j, bool explain);
// `tune` on one target: its jobs, held-out figures, suggestions and table, as JSON and as text.
nlohmann::json tune_json(const TuneOutcome& out);
void print_tune(const TuneOutcome& out, const TuneCommand& c);
// --heldout: one line per shape (losses in percent of its own best), then the mean and worst.
void print_heldout(const nlohmann::json& group);

}  // namespace k3tuner
