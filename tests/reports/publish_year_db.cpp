#include "publish_year_db.h"

#include <cmath>
#include <ctime>
#include <random>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "harness/host/bench/provenance.h"
#include "harness/host/store/database.h"

namespace k3test::publish {
namespace {

using nlohmann::json;

const char* const kOps[] = {"linear_decode", "linear_prefill",   "rmsnorm",   "rope",
                            "silu_mul",      "attention_decode", "kv_append", "softmax"};

}  // namespace

std::string night_time(int night, int seconds) {
  std::tm t{};
  t.tm_year = 2026 - 1900;
  t.tm_mon = 0;
  t.tm_mday = 1 + night;
  t.tm_hour = 3;
  t.tm_sec = seconds;
  const std::time_t when = timegm(&t);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&when, &t));
  return text;
}

namespace {

struct Writer {
  k3store::Connection& db;
  k3store::Statement build = db.prepare(
      "INSERT INTO builds(build_hash, variant, binary_path, compiler, flags, cmake_options,"
      " source_revision, source_dirty, recorded_by, created_at) VALUES (?1, ?2, '/runners/k3bench',"
      " 'clang 19', '-O2', '{}', ?3, 0, 'k3tune build', ?4)");
  k3store::Statement run = db.prepare(
      "INSERT INTO runs(run_uuid, command, target, build_hash, host, processes, repetitions, "
      "warmup,"
      " order_json, started_at, finished_at, status, wall_s, kernel_s, settings_json) VALUES"
      " (?1, ?2, ?3, ?4, 'ci-host', 5, 3, 1, ?5, ?6, ?7, 'finished', 60, 40, ?8)");
  k3store::Statement cell = db.prepare(
      "INSERT OR IGNORE INTO cells(cell_key, target, op, shape_json, params_json, build_hash,"
      " measure_json) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)");
  k3store::Statement aggregate = db.prepare(
      "INSERT INTO aggregates(run_uuid, cell_key, status, processes, samples, source_runs, mean_ns,"
      " ci_low_ns, ci_high_ns, method) VALUES (?1, ?2, 'ok', ?3, ?4, '[]', ?5, ?6, ?7, ?8)");
  k3store::Statement nightly = db.prepare(
      "INSERT INTO nightlies(nightly_id, profile, dir, started_at, finished_at, status, exit_code,"
      " host_build_hash, verdict_run_uuid) VALUES (?1, 'full', ?2, ?3, ?4, ?5, ?6, ?7, ?8)");
  k3store::Statement step = db.prepare(
      "INSERT INTO nightly_steps(nightly_id, step, seq, status, command, exit_code, started_at,"
      " finished_at, wall_s) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?7, ?8)");
  k3store::Statement table = db.prepare(
      "INSERT INTO tuning_tables(table_id, created_at, sessions_json, path, table_json) VALUES"
      " (?1, ?2, '[]', ?3, ?4)");

  struct Figure {
    std::string target, op;
    json shape, params, measure;
    double mean, half_width;
  };

  std::string add_build(const std::string& variant, int night) {
    const std::string hash =
        k3bench::sha256_text(fmt::format("{} runner of night {}", variant, night));
    build.bind(1, hash)
        .bind(2, variant)
        .bind(3, k3bench::sha256_text(fmt::format("rev {}", night)).substr(0, 40));
    build.bind(4, night_time(night, 0));
    build.run();
    return hash;
  }

  std::string add_run(const std::string& command, const std::string& target,
                      const std::string& build_hash, const std::string& started,
                      const json& settings, const std::vector<Figure>& figures) {
    const std::string run_uuid = k3bench::sha256_text(command + started + build_hash).substr(0, 32);
    json order = json::array();
    std::vector<std::string> keys;
    for (const auto& f : figures) {
      keys.push_back(k3bench::sha256_text(json{
          {"target", f.target},
          {"op", f.op},
          {"shape", f.shape},
          {"params", f.params},
          {"build", build_hash},
          {"measure", f.measure}}.dump()));
      order.push_back(keys.back());
    }
    run.bind(1, run_uuid)
        .bind(2, command)
        .bind(3, target)
        .bind(4, build_hash)
        .bind(5, order.dump());
    run.bind(6, started).bind(7, started).bind(8, settings.dump());
    run.run();
    for (std::size_t i = 0; i < figures.size(); ++i) {
      const Figure& f = figures[i];
      cell.bind(1, keys[i]).bind(2, f.target).bind(3, f.op).bind(4, f.shape.dump());
      cell.bind(5, f.params.dump()).bind(6, build_hash).bind(7, f.measure.dump());
      cell.run();
      aggregate.bind(1, run_uuid).bind(2, keys[i]).bind(3, 5).bind(4, 15).bind(5, f.mean);
      aggregate.bind(6, f.mean - f.half_width).bind(7, f.mean + f.half_width);
      aggregate.bind(8,
                     std::string(f.half_width > 0 && settings.contains("metric") ? "exact" : "t"));
      aggregate.run();
    }
    return run_uuid;
  }

  void add_night(int n) {
    std::mt19937_64 rng(1000 + n);
    std::normal_distribution<double> noise(0, 0.005);
    const std::string id = night_id(n), dir = "/srv/nightly/" + id;
    const std::string host = add_build("host", n), rvv = add_build("rvv", n),
                      ime2 = add_build("ime2-emu", n);
    // The timed run: 8 ops x 20 shapes on target local.
    std::vector<Figure> timed;
    for (int o = 0; o < 8; ++o)
      for (int s = 0; s < 20; ++s) {
        const json shape = {{"n", 256 * (s + 1)}, {"k", 1024}};
        double level = 1000.0 * (o + 1) * (s + 1);
        const bool planted = kOps[o] == std::string(kStepOp) && s == 3;  // n=1024,k=1024
        if (planted && n >= kStepNight) level *= 1.10;
        const double mean = level * (1 + noise(rng));
        timed.push_back(
            {"local", kOps[o], shape, {{"workers", 1}}, {{"repetitions", 3}}, mean, 0.005 * mean});
      }
    const std::string started = night_time(n, kTimedRunAt);
    const std::string timed_run = add_run("k3tune bench --farm local --board local", "local", host,
                                          started, {{"processes", {{"min", 5}}}}, timed);
    // Two count runs (RVV and IME2-emulation runners), 10 cases at VLEN 256 and 1024 each.
    for (const auto& [path, hash] :
         {std::pair{std::string("rvv"), rvv}, std::pair{std::string("ime2"), ime2}}) {
      std::vector<Figure> counts;
      for (int c = 0; c < 10; ++c)
        for (int vlen : {256, 1024}) {
          const json shape = {{"n", 256 * (c + 1)}, {"k", 1024}};
          const std::string op = c < 5 ? "linear_decode" : "linear_prefill";
          double count = 1e6 * (c + 1) * 1024.0 / vlen * (path == "rvv" ? 1.0 : 0.4);
          if (path == "rvv" && op == kStepOp && c == 3 && vlen == 1024 && n >= kCountNight)
            count *= 1.02;
          counts.push_back(
              {fmt::format("qemu-vlen{}", vlen),
               op,
               shape,
               {{"path", path}, {"workers", 1}},
               {{"metric", "instructions per call"}, {"repetitions", 1}, {"vlen", vlen}},
               std::round(count),
               150.0});
        }
      add_run("k3tune count --variant " + path, "qemu", hash,
              night_time(n, path == "rvv" ? kRvvCountAt : kRvvCountAt + 60),
              {{"metric", "instructions per call"}}, counts);
    }
    // Every 30th night someone measured something by hand in the afternoon.
    if (n % 30 == 0)
      add_run("k3tune bench --op membw", "local", host, night_time(n, 11 * 3600),
              {{"processes", {{"min", 5}}}},
              {{"local",
                "membw",
                {{"bytes", 1 << 26}},
                {{"mode", "read"}},
                {{"repetitions", 3}},
                2e6 * (1 + noise(rng)),
                2e4}});
    const bool regression = n == kStepNight || n == kCountNight, failed = n == kFailedNight;
    nightly.bind(1, id).bind(2, dir).bind(3, night_time(n, 0)).bind(4, night_time(n, 3000));
    nightly.bind(5, std::string(failed ? "failed" : regression ? "regression" : "ok"));
    nightly.bind(6, failed ? 1 : regression ? 4 : 0).bind(7, host).bind(8, timed_run);
    nightly.run();
    int seq = 0;
    for (const char* name :
         {"build-host", "bench-local", "count", "verdict-bench", "count-verdict-rvv", "report"}) {
      const std::string st = name;
      const int code = (st == "verdict-bench" && n == kStepNight) ||
                               (st == "count-verdict-rvv" && n == kCountNight)
                           ? 4
                       : failed && st == "report" ? 1
                                                  : 0;
      step.bind(1, id).bind(2, st).bind(3, seq++).bind(4,
                                                       std::string(code == 1 ? "failed" : "done"));
      step.bind(5, "k3tune " + st).bind(6, code).bind(7, night_time(n, 100 * seq)).bind(8, 12.5);
      step.run();
    }
    const int epoch = n / 30;
    const json t = {
        {"format", 1},
        {"source", {{"run_uuids", {timed_run}}}},
        {"board", {{"name", "local"}, {"fingerprint", {{"marchid", "x86"}, {"vlen", 0}}}}},
        {"entries",
         {{{"id", "linear_decode/n=1024,k=1024"},
           {"params", {{"tile_n", 32 << (epoch % 3)}, {"workers", 1 + epoch % 2}}},
           {"evidence", {{"speedup", 1.1 + 0.01 * (n % 7)}}}},
          {{"id", "rmsnorm/dim=1024"},
           {"params", {{"workers", 1}}},
           {"evidence", {{"speedup", 1.02}}}}}}};
    table.bind(1, k3bench::sha256_text(t.dump()))
        .bind(2, night_time(n, 2000))
        .bind(3, dir + "/tables/local.json");
    table.bind(4, t.dump());
    table.run();
  }
};

}  // namespace

std::string night_id(int night) {
  const std::string s = night_time(night, 0);  // 2026-01-01T03:00:00Z
  return s.substr(0, 10) + "T0300Z";
}

void add_sweeps(const std::string& path, int first, int last, int configurations) {
  auto db = k3store::open_database(path, k3store::OpenMode::kCreateOrUpdate);
  k3store::Transaction tx(*db);
  {
    Writer w{*db};
    for (int n = first; n < last; ++n) {
      const std::string build = w.add_build("sweep", n);
      std::vector<Writer::Figure> figures;
      for (int c = 1; c <= configurations; ++c)
        figures.push_back({"local",
                           "rmsnorm",
                           {{"rows", 4}, {"dim", 1024}},
                           {{"tile_n", c}},
                           {{"repetitions", 3}},
                           1000.0 + c,
                           5.0});
      w.add_run("k3tune bench --op rmsnorm --grid tile_n=...", "local", build,
                night_time(n, 15 * 3600), {{"processes", {{"min", 5}}}}, figures);
    }
  }
  tx.commit();
}

void add_timed_run_on_a_count_target(const std::string& path, int night) {
  auto db = k3store::open_database(path, k3store::OpenMode::kCreateOrUpdate);
  k3store::Transaction tx(*db);
  {
    Writer w{*db};
    const std::string build = w.add_build("rvv-dynamic", night);
    w.add_run("k3tune bench --target qemu-vlen1024", "qemu-vlen1024", build,
              night_time(night, 16 * 3600), {{"processes", {{"min", 5}}}},
              {{"qemu-vlen1024",
                "linear_decode",
                {{"n", 1024}, {"k", 1024}},
                {{"path", "rvv"}, {"workers", 1}},
                {{"metric", "instructions per call"}, {"repetitions", 1}, {"vlen", 1024}},
                18959.0,
                120.0}});
  }
  tx.commit();
}

void add_nights(const std::string& path, int first, int last) {
  auto db = k3store::open_database(path, k3store::OpenMode::kCreateOrUpdate);
  k3store::Transaction tx(*db);
  {
    Writer w{*db};
    for (int n = first; n < last; ++n) w.add_night(n);
  }
  tx.commit();
}

}  // namespace k3test::publish
