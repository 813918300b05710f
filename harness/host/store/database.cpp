#include "harness/host/store/database.h"

#include <sys/stat.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <thread>
#include <vector>

#include <fmt/format.h>

namespace k3store {
namespace {

// Migration i takes the schema from version i to i + 1. Append only; never edit a shipped one.
const std::vector<const char*> kMigrations = {
    R"sql(
CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE builds(
  build_hash TEXT PRIMARY KEY,           -- SHA-256 of the k3bench binary
  variant TEXT NOT NULL,                 -- host, rvv, ... or 'external' (not built by k3tune build)
  binary_path TEXT NOT NULL,
  compiler TEXT NOT NULL,
  flags TEXT NOT NULL,
  cmake_options TEXT NOT NULL,           -- JSON object of the -D options of the build tree
  source_revision TEXT NOT NULL,
  source_dirty INTEGER,                  -- 1 dirty, 0 clean, NULL unknown
  recorded_by TEXT NOT NULL,             -- 'k3tune build' or 'runner report'
  created_at TEXT NOT NULL);
CREATE TABLE runs(
  run_uuid TEXT PRIMARY KEY,
  command TEXT NOT NULL,
  target TEXT NOT NULL,
  build_hash TEXT NOT NULL REFERENCES builds(build_hash),
  host TEXT NOT NULL,
  processes INTEGER NOT NULL,
  repetitions INTEGER NOT NULL,
  warmup INTEGER NOT NULL,
  order_json TEXT NOT NULL,              -- cell keys of one interleaved round, in execution order
  started_at TEXT NOT NULL,
  finished_at TEXT,
  status TEXT NOT NULL CHECK(status IN ('running', 'finished', 'interrupted')),
  wall_s REAL,                           -- whole sweep, wall clock
  kernel_s REAL);                        -- sum of measured kernel time (for the overhead figure)
CREATE TABLE cells(
  cell_key TEXT PRIMARY KEY,
  target TEXT NOT NULL,
  op TEXT NOT NULL,
  shape_json TEXT NOT NULL,
  params_json TEXT NOT NULL,             -- every parameter, defaults filled in, plus the path
  build_hash TEXT NOT NULL REFERENCES builds(build_hash),
  measure_json TEXT NOT NULL);           -- repetitions, warm-up, min time, check
CREATE TABLE processes(
  run_uuid TEXT NOT NULL REFERENCES runs(run_uuid),
  cell_key TEXT NOT NULL REFERENCES cells(cell_key),
  process_index INTEGER NOT NULL,
  order_index INTEGER NOT NULL,          -- position in the run's execution sequence
  status TEXT NOT NULL CHECK(status IN ('ok', 'failed')),
  exit_code INTEGER,
  reason TEXT,                           -- why it failed (timeout, signal, runner message)
  wall_ns INTEGER NOT NULL,              -- runner process wall time, spawn to exit
  kernel_ns REAL NOT NULL,               -- sum over repetitions of time per call x calls
  path TEXT,
  runner_json TEXT,                      -- dispatch, accuracy, environment, counter status
  finished_at TEXT NOT NULL,
  PRIMARY KEY(run_uuid, cell_key, process_index));
CREATE TABLE samples(
  run_uuid TEXT NOT NULL,
  cell_key TEXT NOT NULL,
  process_index INTEGER NOT NULL,
  rep_index INTEGER NOT NULL,
  ns REAL NOT NULL,
  cpu_ns REAL NOT NULL,
  iterations INTEGER NOT NULL,
  cycles REAL, instructions REAL, cache_misses REAL,
  stalled_cycles_frontend REAL, stalled_cycles_backend REAL,
  outlier INTEGER NOT NULL DEFAULT 0,    -- outside its process's Tukey fences (kept, flagged)
  PRIMARY KEY(run_uuid, cell_key, process_index, rep_index),
  FOREIGN KEY(run_uuid, cell_key, process_index) REFERENCES processes(run_uuid, cell_key, process_index));
CREATE TABLE aggregates(
  run_uuid TEXT NOT NULL REFERENCES runs(run_uuid),
  cell_key TEXT NOT NULL REFERENCES cells(cell_key),
  status TEXT NOT NULL CHECK(status IN ('ok', 'failed')),
  reason TEXT,
  processes INTEGER NOT NULL,
  samples INTEGER NOT NULL,
  source_runs TEXT NOT NULL,             -- JSON list: runs whose processes are included (--resume)
  mean_ns REAL, ci_low_ns REAL, ci_high_ns REAL, ci_rel_half_width REAL,
  cv_between REAL, cv_all REAL, min_ns REAL, median_ns REAL,
  outliers INTEGER, wide_ci INTEGER, method TEXT,
  PRIMARY KEY(run_uuid, cell_key));
CREATE INDEX processes_by_cell ON processes(cell_key, status);
CREATE INDEX aggregates_by_cell ON aggregates(cell_key, status);
INSERT INTO meta(key, value) VALUES ('created_by', 'k3tune');
)sql",
    // 1 -> 2: where a run's wall time went, disturbed processes and repetitions, per-cell stop
    // reasons, and the measured noise floor of each target.
    R"sql(
ALTER TABLE runs ADD COLUMN warmup_s REAL;         -- warm-up (and calibration) calls of all processes
ALTER TABLE runs ADD COLUMN overhead_s REAL;       -- wall - kernel - warm-up
ALTER TABLE runs ADD COLUMN settings_json TEXT;    -- process plan (min/max/target CI), builds compared
ALTER TABLE processes ADD COLUMN disturbed INTEGER NOT NULL DEFAULT 0;  -- a repetition was disturbed
ALTER TABLE processes ADD COLUMN timing_json TEXT; -- the runner's own split: setup, check, warm-up, measured
ALTER TABLE samples ADD COLUMN flags TEXT;         -- JSON list of disturbances seen around the repetition
ALTER TABLE samples ADD COLUMN cpu_migrations REAL;
ALTER TABLE samples ADD COLUMN context_switches REAL;
ALTER TABLE aggregates ADD COLUMN excluded_processes INTEGER NOT NULL DEFAULT 0;  -- disturbed, not counted
ALTER TABLE aggregates ADD COLUMN stop_reason TEXT;  -- fixed count, CI within target, max processes
CREATE TABLE noise_floors(
  target TEXT NOT NULL,
  cpu_model TEXT NOT NULL,
  op TEXT NOT NULL,
  shape_json TEXT NOT NULL,
  measured_at TEXT NOT NULL,
  trials INTEGER NOT NULL,                 -- A-vs-A trials behind it
  mean_processes REAL NOT NULL,            -- per side, at the default (adaptive) budget
  noise_floor REAL NOT NULL,               -- standard deviation of the relative A-vs-A difference
  abs_diff_q95 REAL NOT NULL,              -- 95th percentile of |relative A-vs-A difference|
  minimum_detectable_effect REAL,          -- median per-trial MDE at power 0.8
  settings_json TEXT NOT NULL,             -- the measurement settings and process plan used
  PRIMARY KEY(target, cpu_model, op, shape_json, measured_at));
)sql",
    // 2 -> 3: the board farm (harness/host/farm): leases, quarantines and health probes.
    R"sql(
CREATE TABLE farm_leases(
  board TEXT PRIMARY KEY,                -- one holder per board
  farm TEXT NOT NULL,
  run_uuid TEXT NOT NULL,                -- the holder's run (not a foreign key: taken before the run row)
  holder_host TEXT NOT NULL,             -- controller host name
  holder_pid INTEGER NOT NULL,           -- controller process
  holder_start TEXT NOT NULL,            -- '<boot_id>:<start ticks>' of that process (pid reuse guard)
  remote_pid INTEGER,                    -- board-side process holding <work_dir>/lease.lock
  acquired_at TEXT NOT NULL);
CREATE TABLE farm_quarantine(
  run_uuid TEXT NOT NULL,
  board TEXT NOT NULL,
  fault TEXT NOT NULL,                   -- unreachable, host-key, unresponsive, rebooted, probe-failed, repeated-timeouts
  reason TEXT NOT NULL,                  -- one line
  at TEXT NOT NULL,
  PRIMARY KEY(run_uuid, board));
CREATE TABLE farm_probes(
  run_uuid TEXT NOT NULL,
  board TEXT NOT NULL,
  seq INTEGER NOT NULL,                  -- 0, 1, ... per board and run
  taken_at TEXT NOT NULL,
  ok INTEGER NOT NULL,
  probe_json TEXT NOT NULL,              -- uptime, load, memory, thermal, cpufreq, marchid, vlenb, TCM
  PRIMARY KEY(run_uuid, board, seq));
)sql",
    // 3 -> 4: tuning sessions (k3tune tune): every measured point, resumable; the tables written.
    R"sql(
CREATE TABLE tuning_sessions(
  session_id TEXT PRIMARY KEY,           -- hash of what was asked: op, shape, space, strategy, seed, target, build
  created_at TEXT NOT NULL,
  finished_at TEXT,
  command TEXT NOT NULL,
  target TEXT NOT NULL,
  build_hash TEXT NOT NULL,
  run_uuid TEXT,                         -- the run whose processes hold the time measurements
  op TEXT NOT NULL,
  shape_json TEXT NOT NULL,
  model TEXT,
  space_json TEXT NOT NULL,              -- the space file's path, knobs and the counts before/after constraints
  strategy TEXT NOT NULL,
  seed INTEGER NOT NULL,
  budget INTEGER NOT NULL,               -- measurements allowed
  objective TEXT NOT NULL,               -- time | instructions (a proxy) | synthetic
  status TEXT NOT NULL CHECK(status IN ('running', 'finished')),
  result_json TEXT);                     -- chosen configuration, evidence, measurements used
CREATE TABLE tuning_measurements(
  session_id TEXT NOT NULL REFERENCES tuning_sessions(session_id),
  point_key TEXT NOT NULL,               -- the configuration, "k=v,..." in key order
  measurement INTEGER NOT NULL,          -- 0, 1, ... per point (disturbed ones included)
  round INTEGER NOT NULL,                -- the interleaved round it ran in
  value REAL,                            -- ns per call or instructions per call; NULL when rejected
  disturbed INTEGER NOT NULL DEFAULT 0,  -- kept, not counted
  rejected INTEGER NOT NULL DEFAULT 0,
  reason TEXT,
  cell_key TEXT,                         -- its process and samples (time objective)
  PRIMARY KEY(session_id, point_key, measurement));
CREATE TABLE tuning_points(
  session_id TEXT NOT NULL REFERENCES tuning_sessions(session_id),
  point_key TEXT NOT NULL,
  op TEXT NOT NULL,
  shape_json TEXT NOT NULL,
  config_json TEXT NOT NULL,
  cell_key TEXT,
  status TEXT NOT NULL CHECK(status IN ('measured', 'rejected')),
  reason TEXT,
  processes INTEGER NOT NULL,            -- counted measurements
  mean_ns REAL, ci_low_ns REAL, ci_high_ns REAL,
  PRIMARY KEY(session_id, point_key));
CREATE TABLE tuning_tables(
  table_id TEXT PRIMARY KEY,             -- SHA-256 of the table's JSON text
  created_at TEXT NOT NULL,
  sessions_json TEXT NOT NULL,           -- the sessions behind its entries
  path TEXT,
  table_json TEXT NOT NULL);
)sql",
    // 4 -> 5: what `k3tune probe` measured on a target: the measured ceilings of the reports'
    // roofline (streaming bandwidth, compute peaks of the runner's own code).
    R"sql(
CREATE TABLE target_probes(
  target TEXT NOT NULL,
  cpu_model TEXT NOT NULL,
  measured_at TEXT NOT NULL,
  host TEXT NOT NULL,                    -- controller host name
  build_hash TEXT NOT NULL,              -- SHA-256 of the runner that measured (not a foreign key)
  membw_read_gbps REAL,                  -- membw op, mode=read, all workers
  peak_f32_gflops REAL,                  -- peak op, mode=f32: multiply-add chains as compiled
  peak_i16_gops REAL,                    -- peak op, mode=i16
  probe_json TEXT NOT NULL,              -- the whole probe (VLEN, marchid, TCM, every figure)
  PRIMARY KEY(target, cpu_model, measured_at));
)sql",
    // 5 -> 6: sweeps over a farm (every hand-out of a cell to a board, so moved and re-measured
    // cells can be traced) and the nightly job's steps (what is done, for resuming).
    R"sql(
CREATE TABLE farm_sweep_cells(
  sweep_uuid TEXT NOT NULL,              -- the farm run (leases, quarantines and probes use it too)
  cell_index INTEGER NOT NULL,           -- position in the sweep's canonical cell list (before sharding)
  attempt INTEGER NOT NULL,              -- 1, 2, ...: hand-outs of this cell to a board
  board TEXT NOT NULL,
  run_uuid TEXT,                         -- the board's batch run that measured it (NULL: never started)
  cell_key TEXT,                         -- the cell on that board (board, op, shape, params, build, settings)
  outcome TEXT NOT NULL CHECK(outcome IN ('measured', 'failed', 'skipped', 'moved', 'disturbed',
                                          'unmeasured')),
  reason TEXT,                           -- one line: why it moved, was re-measured or failed
  shard TEXT NOT NULL,                   -- "i/n" ("1/1": no sharding)
  at TEXT NOT NULL,
  PRIMARY KEY(sweep_uuid, cell_index, attempt));
CREATE TABLE nightly_steps(
  nightly_id TEXT NOT NULL,              -- the nightly's directory name, e.g. 2026-12-01T0300Z
  step TEXT NOT NULL,                    -- build-host, bench, tune-..., verdict, ...
  seq INTEGER NOT NULL,                  -- position in the profile's step list
  status TEXT NOT NULL CHECK(status IN ('running', 'done', 'failed')),
  command TEXT NOT NULL,
  exit_code INTEGER,
  started_at TEXT NOT NULL,
  finished_at TEXT,
  wall_s REAL,
  detail_json TEXT,                      -- what later steps need: run ids, build hashes, table paths
  PRIMARY KEY(nightly_id, step));
CREATE TABLE nightlies(
  nightly_id TEXT PRIMARY KEY,
  profile TEXT NOT NULL,                 -- quick | full
  dir TEXT NOT NULL,                     -- artifacts: summary.md, report.html, tables/
  started_at TEXT NOT NULL,
  finished_at TEXT,
  status TEXT NOT NULL CHECK(status IN ('running', 'ok', 'regression', 'failed')),
  exit_code INTEGER,
  host_build_hash TEXT,                  -- the host runner measured by the verdict (next night's baseline)
  verdict_run_uuid TEXT);                -- the verdict's run (A/B against the previous nightly when possible)
)sql",
    // 6 -> 7: the measurement cache of exact objectives: an instruction count is taken once per
    // runner build, op, shape, every parameter and setting, emulated CPU (VLEN) and method, and
    // reused by every later tuning session, strategy, space and campaign.
    R"sql(
CREATE TABLE exact_measurements(
  cache_key TEXT PRIMARY KEY,            -- SHA-256 of identity_json
  identity_json TEXT NOT NULL,           -- build, runner arguments (op, shape, params, path), env, CPU, method
  build_hash TEXT NOT NULL,              -- SHA-256 of the runner (not a foreign key)
  op TEXT NOT NULL,
  cpu TEXT NOT NULL,                     -- the emulated CPU, e.g. rv64,v=true,vlen=1024,...
  method TEXT NOT NULL,                  -- how the value was taken, e.g. insns-9-minus-1
  value REAL NOT NULL,                   -- instructions per call
  measured_at TEXT NOT NULL,
  session_id TEXT);                      -- the tuning session that counted it first
)sql",
    // 7 -> 8: board state that outlives a run (harness/host/store/farm_state.h): every quarantine,
    // release and recovery of a board, so a quarantined board stays out of later runs (and of
    // other controllers sharing or merging this database) until it is released or probes healthy;
    // and the cell claims through which controllers sharing this database share one queue.
    R"sql(
CREATE TABLE farm_board_events(
  farm TEXT NOT NULL,                    -- the inventory's farm name
  board TEXT NOT NULL,
  at TEXT NOT NULL,                      -- UTC with microseconds: the latest event is the board's state
  event TEXT NOT NULL CHECK(event IN ('quarantined', 'released', 'recovered')),
  fault TEXT,                            -- quarantined: unreachable, host-key, rebooted, ...
  reason TEXT NOT NULL,                  -- one line
  run_uuid TEXT,                         -- the run that quarantined or re-probed the board
  actor TEXT NOT NULL,                   -- host:pid of the controller or of `k3tune farm release`
  PRIMARY KEY(farm, board, at, event));
CREATE TABLE farm_queue_claims(          -- bench --farm --shared-queue: live state, never merged
  queue_key TEXT NOT NULL,               -- SHA-256 of the farm and the command's canonical cell list
  cell_index INTEGER NOT NULL,
  sweep_uuid TEXT NOT NULL,              -- the controller's sweep that took the cell
  holder_host TEXT NOT NULL,
  holder_pid INTEGER NOT NULL,
  holder_start TEXT NOT NULL,            -- '<boot_id>:<start ticks>' (pid reuse guard)
  state TEXT NOT NULL CHECK(state IN ('taken', 'done')),
  at TEXT NOT NULL,
  PRIMARY KEY(queue_key, cell_index));
)sql",
    // 8 -> 9: `k3tune bisect`: one row per bisection (its range, cases and result) and one per
    // probed commit and case (the effect against the good runner with its interval).
    R"sql(
CREATE TABLE bisections(
  bisection_id TEXT PRIMARY KEY,         -- a UUID
  good_revision TEXT NOT NULL,           -- full commit hashes
  bad_revision TEXT NOT NULL,
  metric TEXT NOT NULL CHECK(metric IN ('time', 'instructions')),
  variant TEXT NOT NULL,                 -- the runner preset built at every probe
  place TEXT NOT NULL,                   -- target or board measured on
  cases_json TEXT NOT NULL,              -- the cases chased, with the effect measured at the bad revision
  commits INTEGER NOT NULL,              -- commits after good up to bad
  status TEXT NOT NULL CHECK(status IN ('running', 'found', 'range', 'not-reproduced', 'failed')),
  first_bad TEXT,                        -- status found: the first bad commit
  range_json TEXT,                       -- status range: the commits skips leave undecided, oldest first
  started_at TEXT NOT NULL,
  finished_at TEXT,
  wall_s REAL,
  nightly_id TEXT);                      -- the nightly whose regression it chased (--from-nightly)
CREATE TABLE bisection_probes(
  bisection_id TEXT NOT NULL REFERENCES bisections(bisection_id),
  seq INTEGER NOT NULL,                  -- probe order (0: the bad revision)
  case_label TEXT NOT NULL,              -- "" for a probe skipped before any case was measured
  revision TEXT NOT NULL,
  position INTEGER NOT NULL,             -- 1 = first commit after good ... commits = bad
  outcome TEXT NOT NULL CHECK(outcome IN ('good', 'bad', 'skip')),
  reason TEXT,                           -- skip: did not build / the runner failed, one line
  build_hash TEXT,
  run_uuid TEXT,                         -- the A/B run (time) or the count run (instructions)
  effect REAL,                           -- time: relative change against good; instructions: per call
  ci_low REAL,
  ci_high REAL,
  mde REAL,                              -- time only: minimum detectable effect of the deciding run
  rounds INTEGER,                        -- time only: rounds of the deciding run
  attempts INTEGER,                      -- time only: runs measured (more rounds after an MDE too wide)
  verdict TEXT,                          -- the verdict text of the deciding comparison
  at TEXT NOT NULL,
  PRIMARY KEY(bisection_id, seq, case_label));
)sql",
    // 9 -> 10: power recovery of dead boards (harness/host/farm/power_recovery.h): the steps of a
    // power cycle through the lab's PDU daemon join the board events. SQLite cannot widen a CHECK
    // in place: the table is copied into one with the wider list.
    R"sql(
CREATE TABLE farm_board_events_v10(
  farm TEXT NOT NULL,
  board TEXT NOT NULL,
  at TEXT NOT NULL,                      -- UTC with microseconds
  event TEXT NOT NULL CHECK(event IN ('quarantined', 'released', 'recovered', 'power_requested',
                                      'power_done', 'came_back', 'not_back', 'healthy',
                                      'unhealthy', 'given_up')),
  fault TEXT,                            -- quarantined, given_up: unreachable, host-key, ...
  reason TEXT NOT NULL,                  -- one line
  run_uuid TEXT,                         -- the run that quarantined, re-probed or power-cycled it
  actor TEXT NOT NULL,                   -- host:pid of the controller or of `k3tune farm release`
  PRIMARY KEY(farm, board, at, event));
INSERT INTO farm_board_events_v10 SELECT farm, board, at, event, fault, reason, run_uuid, actor
  FROM farm_board_events;
DROP TABLE farm_board_events;
ALTER TABLE farm_board_events_v10 RENAME TO farm_board_events;
)sql",
};

bool file_is_empty_or_missing(const std::string& path) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) return true;
  return st.st_size == 0;
}

// SQLite's own header check, done by hand so a foreign file is rejected before SQLite opens it.
void require_sqlite_header(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw StoreError(fmt::format("{}: cannot read the file", path));
  char header[16] = {};
  f.read(header, sizeof(header));
  if (f.gcount() != 16 || std::memcmp(header, "SQLite format 3", 16) != 0) {
    throw StoreError(fmt::format("{}: not a k3tune database (not an SQLite file)", path));
  }
}

void validate_existing(Connection& c, const std::string& path) {
  // Read in one statement, so one snapshot: read one by one, another process's creation could
  // commit in between (application_id still 0, then the schema there), and a database being
  // created would look like another application's.
  std::int64_t app_id = 0, version = 0, objects = 0;
  try {
    auto s = c.prepare(
        "SELECT (SELECT application_id FROM pragma_application_id),"
        " (SELECT user_version FROM pragma_user_version), (SELECT count(*) FROM sqlite_master)");
    if (!s.step()) throw StoreError("no header values");
    app_id = s.integer(0);
    version = s.integer(1);
    objects = s.integer(2);
  } catch (const StoreError& e) {
    throw StoreError(fmt::format("{}: damaged database ({})", path, e.what()));
  }
  // A blank SQLite file: one another k3tune process is creating right now (its first transaction
  // not yet committed). It is set up below, under the write lock, like a missing one.
  if (app_id == 0 && version == 0 && objects == 0) return;
  if (app_id != kApplicationId) {
    throw StoreError(fmt::format("{}: not a k3tune database (application_id {:#x}, expected {:#x})",
                                 path, app_id, kApplicationId));
  }
  if (version > kSchemaVersion) {
    throw StoreError(
        fmt::format("{}: schema version {} is newer than this k3tune ({}); update k3tune", path,
                    version, kSchemaVersion));
  }
  std::string first;
  try {
    auto check = c.prepare("PRAGMA quick_check");
    if (check.step()) first = check.text(0);
  } catch (const StoreError& e) {
    throw StoreError(fmt::format("{}: damaged database ({})", path, e.what()));
  }
  if (first != "ok")
    throw StoreError(fmt::format("{}: damaged database (quick_check: {})", path, first));
}

}  // namespace

std::unique_ptr<Connection> open_database(const std::string& path, OpenMode mode) {
  struct stat st {};
  if (stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode))
    throw StoreError(fmt::format("{}: {}, not a k3tune database file", path,
                                 S_ISDIR(st.st_mode) ? "a directory" : "not a regular file"));
  const bool fresh = file_is_empty_or_missing(path);
  if (mode == OpenMode::kReadOnly && fresh) {
    throw StoreError(fmt::format("{}: no such k3tune database (missing or empty file)", path));
  }
  if (!fresh) require_sqlite_header(path);
  if (mode == OpenMode::kCreateOrUpdate)
    std::filesystem::create_directories(std::filesystem::absolute(path).parent_path());
  const int flags = mode == OpenMode::kReadOnly ? SQLITE_OPEN_READONLY
                                                : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE;
  auto c = std::make_unique<Connection>(path, flags);
  c->exec(
      "PRAGMA busy_timeout = 30000");  // shards and readers wait for a writer instead of failing
  if (!fresh) validate_existing(*c, path);
  c->exec("PRAGMA foreign_keys = ON");
  if (mode == OpenMode::kReadOnly) {
    if (c->scalar_int("PRAGMA user_version") != kSchemaVersion) {
      throw StoreError(
          fmt::format("{}: older schema; open it once with a writing command to migrate", path));
    }
    return c;
  }
  // WAL: readers (reports) never block the sweep's commits. Switching a database to WAL needs it
  // alone, and SQLite answers SQLITE_BUSY at once, without the busy handler, while another process
  // holds it (two controllers starting on one new database in the same instant: seen in CI).
  // Waited for here as busy_timeout would.
  for (int waited_ms = 0;; waited_ms += 20) {
    try {
      c->exec("PRAGMA journal_mode = WAL");
      break;
    } catch (const StoreError&) {
      if (c->last_error() != SQLITE_BUSY || waited_ms >= 30000) throw;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  c->exec(
      "PRAGMA synchronous = NORMAL");  // WAL + NORMAL: a power cut loses at most the last commit
  const std::int64_t version = c->scalar_int("PRAGMA user_version");
  if (version < kSchemaVersion) {
    Transaction tx(*c);
    // Again under the write lock: another process may have created or migrated it meanwhile.
    const std::int64_t now = c->scalar_int("PRAGMA user_version");
    if (now == 0) c->exec(fmt::format("PRAGMA application_id = {}", kApplicationId));
    for (std::int64_t v = now; v < kSchemaVersion; ++v)
      c->exec(kMigrations[static_cast<std::size_t>(v)]);
    c->exec(fmt::format("PRAGMA user_version = {}", kSchemaVersion));
    tx.commit();
  }
  return c;
}

std::unique_ptr<Connection> open_for_writing(const std::string& path) {
  return open_database(path, OpenMode::kCreateOrUpdate);
}

}  // namespace k3store
