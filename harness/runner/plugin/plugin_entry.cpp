// The kernel plugin's side of k3bench_plugin.h: this build's op drivers and kernels behind the C
// interface. Cases are built exactly as k3bench builds its own (case_factory.h), so the second
// build validates, refuses and checks in the same words; nothing thrown crosses the interface.
#include "harness/runner/plugin/k3bench_plugin.h"

#include <chrono>
#include <cstdio>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "harness/runner/case_factory.h"
#include "harness/runner/case_json.h"
#include "harness/runner/environment.h"
#include "harness/runner/errors.h"
#include "harness/runner/output_checksum.h"
#include "harness/runner/path_option.h"
#include "harness/runner/placement.h"
#include "harness/runner/run_settings.h"
#include "k3k/aligned_buffer.h"

// A build option, never an environment switch: a plugin built with K3_PLANTED_SLOWDOWN_PERCENT=p
// spends p% more on every timed call than its kernels did (a clock-timed busy wait after the call),
// the known effect the selfcheck's build-pair cell measures the verdicts against.
#ifndef K3_PLANTED_SLOWDOWN_PERCENT
#define K3_PLANTED_SLOWDOWN_PERCENT 0
#endif

struct k3bench_plugin_case {
  std::unique_ptr<k3runner::OpCase> c;
  nlohmann::json dispatch;
  std::string text;  // the last JSON handed out (valid until the next call on the case)
};

namespace k3runner {
namespace {

void set_error(k3bench_plugin_error* error, int exit_code, const std::string& message) {
  if (error == nullptr) return;
  error->exit_code = exit_code;
  std::snprintf(error->message, sizeof(error->message), "%s", message.c_str());
}

// Runs `f`, turning what it throws into the error's exit class and message.
template <class F>
bool guarded(k3bench_plugin_error* error, F&& f) {
  try {
    f();
    return true;
  } catch (const UsageError& e) {
    set_error(error, kExitUsage, e.what());
  } catch (const UnsupportedShape& e) {
    set_error(error, kExitUnsupported, e.what());
  } catch (const std::exception& e) {
    set_error(error, kExitInternal, e.what());
  }
  return false;
}

const nlohmann::json& string_field(const nlohmann::json& j, const char* name) {
  if (!j.contains(name) || !j[name].is_string())
    throw UsageError(std::string("case: missing string field '") + name + "'");
  return j[name];
}

const char* plugin_build_json() {
  static const std::string text = [] {
    const nlohmann::json env = environment_static();
    nlohmann::json build = env["build"];
    build["planted_slowdown_percent"] = K3_PLANTED_SLOWDOWN_PERCENT;
    return nlohmann::json{{"runner", env["runner"]}, {"build", build}}.dump();
  }();
  return text.c_str();
}

int plugin_configure(const char* settings_json, k3bench_plugin_error* error) {
  return guarded(error,
                 [&] {
                   const nlohmann::json j = nlohmann::json::parse(settings_json);
                   RunSettings& rs = run_settings();
                   rs.cpus = j.value("cpus", rs.cpus);
                   rs.pool_wait = j.value("pool_wait", rs.pool_wait);
                   rs.huge_pages = j.value("huge_pages", rs.huge_pages);
                   rs.weight_load = j.value("weight_load", rs.weight_load);
                   k3k::set_huge_page_buffers(rs.huge_pages);
                   place_main_thread();  // this build's gates read the CPU as k3bench's own did
                 })
             ? 0
             : 1;
}

k3bench_plugin_case* plugin_create(const char* case_json, k3bench_plugin_error* error) {
  auto handle = std::make_unique<k3bench_plugin_case>();
  const bool made = guarded(error, [&] {
    const nlohmann::json j = nlohmann::json::parse(case_json);
    const OpInfo& op = op_named(string_field(j, "op"));
    const k3k::PathDecision decision = decide_path_option(string_field(j, "path"));
    const CaseInputs in{KeyValues(op.shape_keys, parse_kv_list(string_field(j, "shape"), "--shape"),
                                  "--shape", true),
                        KeyValues(op.params, parse_kv_list(string_field(j, "params"), "--params"),
                                  "--params", false),
                        j.value("seed", std::uint64_t{1}), decision.path};
    check_case_fits(op.footprint(in.shape, in.params));
    handle->c = make_case(op, in);
    handle->dispatch = {{"requested", j["path"]},
                        {"path", handle->c->path()},
                        {"reason", decision.reason},
                        {"emulated", decision.emulated}};
  });
  return made ? handle.release() : nullptr;
}

void plugin_run_once(k3bench_plugin_case* c) {
  if constexpr (K3_PLANTED_SLOWDOWN_PERCENT == 0) {
    c->c->run_once();
  } else {
    using Clock = std::chrono::steady_clock;
    const Clock::time_point start = Clock::now();
    c->c->run_once();
    const Clock::time_point until =
        start + (Clock::now() - start) * (100 + K3_PLANTED_SLOWDOWN_PERCENT) / 100;
    while (Clock::now() < until) {
    }
  }
}

const char* plugin_check(k3bench_plugin_case* c, int full, k3bench_plugin_error* error) {
  const bool checked = guarded(error, [&] {
    Accuracy a = c->c->check(full != 0);
    a.output_checksum = output_checksum(*c->c);
    c->text = accuracy_json(a).dump();
  });
  return checked ? c->text.c_str() : nullptr;
}

const char* plugin_describe(k3bench_plugin_case* c, k3bench_plugin_error* error) {
  const bool described = guarded(error, [&] {
    c->text = nlohmann::json{{"path", c->c->path()},
                             {"dispatch", c->dispatch},
                             {"params", c->c->params_used()},
                             {"traffic", traffic_json(c->c->traffic())},
                             {"rotation", c->c->rotation()}}
                  .dump();
  });
  return described ? c->text.c_str() : nullptr;
}

void plugin_destroy(k3bench_plugin_case* c) {
  delete c;
}

}  // namespace
}  // namespace k3runner

extern "C" const k3bench_plugin* k3bench_plugin_interface(void) {
  using namespace k3runner;
  static const k3bench_plugin table = {K3BENCH_PLUGIN_INTERFACE_VERSION,
                                       sizeof(k3bench_plugin),
                                       plugin_build_json,
                                       plugin_configure,
                                       plugin_create,
                                       plugin_run_once,
                                       plugin_check,
                                       plugin_describe,
                                       plugin_destroy};
  return &table;
}
