// A results database of many nights written straight into SQLite (the store's schema, opened and
// migrated by k3store::open_database): per night a host build and a timed run of 160 cells on
// target "local", two instruction-count runs (RVV and IME2-emulation runners, 10 cases at VLEN 256
// and 1024: 40 cells on "qemu-vlen256"/"qemu-vlen1024"), the nightly with its steps, and the
// tuning table it wrote; every 30th night also a run outside any nightly. 200 cells a night: a
// year is 365 x 200 = 73,000 figures, in a few seconds instead of 73,000 runner processes.
//
// Known truths planted for the tests: the timed figure of kStepOp kStepShape is 10% slower from
// night kStepNight on (every other figure is 0.5% noise around a constant level); the RVV count of
// kStepOp kStepShape at VLEN 1024 is 2% higher from night kCountNight on (far beyond its jitter);
// those two nights are regressions (exit 4), night kFailedNight failed (exit 1); the table's
// entry changes its parameters every 30 nights.
#pragma once

#include <string>

namespace k3test::publish {

inline constexpr const char* kStepOp = "linear_decode";
inline constexpr const char* kStepShape = "k=1024,n=1024";  // as shape_text prints it (keys sorted)
inline constexpr int kStepNight = 200;
inline constexpr int kCountNight = 300;
inline constexpr int kFailedNight = 100;
inline constexpr int kTimedCells = 160, kCountCells = 40;

// The id of night `i` (0-based): 2026-01-01T0300Z, ...
std::string night_id(int night);
// The time `seconds` after night `i` started (03:00 UTC), as the store writes times.
std::string night_time(int night, int seconds);
inline constexpr int kTimedRunAt = 60, kRvvCountAt = 600;  // seconds into the night

// Adds nights [first, last) to the database at `path` (created when missing).
void add_nights(const std::string& path, int first, int last);
// Adds, on the afternoon of each night [first, last), a run measuring `configurations` parameter
// sets (tile_n = 1, 2, ...) of rmsnorm rows=4,dim=1024 on target local, as a tuning sweep does.
void add_sweeps(const std::string& path, int first, int last, int configurations);

// A timed bench run on night `night` whose target is named like the nightly's count targets
// (qemu-vlen1024) and whose cell is one the counts have (linear_decode n=1024,k=1024, path rvv):
// its times must not join the counts' series.
void add_timed_run_on_a_count_target(const std::string& path, int night);

}  // namespace k3test::publish
