// `k3tune tcm status|release --target T`: the TCM blocks on a target as the runner sees them, and
// the explicit recovery of blocks left acquired by a killed process (stale locks). Recovery is
// never automatic: `release` clears only stale blocks unless --force names a live owner's block.
#include <iostream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "apps/cli/app_context.h"

namespace k3cli {

void add_tcm_command(CLI::App& app, AppContext& ctx) {
  struct Args {
    std::string target = "local";
    std::string backend = "auto";
    std::string blocks = "all";
    bool force = false;
  };
  auto a = std::make_shared<Args>();
  auto* tcm =
      app.add_subcommand("tcm", "TCM blocks on a target: status, explicit stale-lock recovery");
  tcm->require_subcommand(1);
  auto* status =
      tcm->add_subcommand("status", "backend, geometry and every block's hand-off state");
  auto* release =
      tcm->add_subcommand("release", "force-release stale blocks (a killed run's locks)");
  for (auto* cmd : {status, release}) {
    cmd->add_option("--target", a->target, "target name")->capture_default_str();
    cmd->add_option("--tcm-backend", a->backend, "auto, real, emulated")->capture_default_str();
  }
  release->add_option("--blocks", a->blocks, "\"all\" (every stale block) or a list like 0,3")
      ->capture_default_str();
  release->add_flag("--force", a->force, "also release blocks held by a live thread");

  auto run = [&ctx, a](std::vector<std::string> args) {
    auto t = ctx.target(a->target);
    if (!t->missing().empty())
      throw k3bench::UserError(fmt::format("target {}: missing {}", t->name(), t->missing().front()));
    args.insert(args.end(), {"--tcm-backend", a->backend, "--json"});
    const double timeout = t->config().timeout_s;
    const auto r = t->run(args, k3targets::ProcessOptions::with_timeout(timeout));
    if (r.out.empty())
      throw k3bench::UserError(fmt::format("target {}: {}", t->name(), r.failure_reason(timeout)));
    return std::make_pair(nlohmann::json::parse(r.out), r);
  };
  status->callback([&ctx, a, run] {
    const auto [j, r] = run({"--tcm-status"});
    if (ctx.json) {
      std::cout << j.dump(2) << "\n";
      return;
    }
    fmt::print("TCM backend {} ({})\n", j["backend"].get<std::string>(),
               j["reason"].get<std::string>());
    if (!j.contains("blocks")) return;
    for (const auto& b : j["blocks"]) {
      fmt::print("  block {}  {}\n", b["id"].get<int>(),
                 !b["acquired"].get<bool>() ? std::string("free")
                 : b["stale"].get<bool>()
                     ? fmt::format("STALE (dead tid {})", b["owner_tid"].get<int>())
                     : fmt::format("held by live tid {}", b["owner_tid"].get<int>()));
    }
    if (!j["stale_blocks"].empty())
      fmt::print("stale locks: recover with `k3tune tcm release --target {}`\n", a->target);
  });
  release->callback([&ctx, a, run] {
    std::vector<std::string> args = {"--tcm-force-release", a->blocks};
    if (a->force) args.push_back("--force");
    const auto [j, r] = run(args);
    if (ctx.json)
      std::cout << j.dump(2) << "\n";
    else
      for (const auto& x : j["results"])
        fmt::print("block {}: {}\n", x["block"].get<int>(), x["action"].get<std::string>());
    if (r.exit_code != 0) throw k3bench::UserError("some blocks were not released (see above)");
  });
}

}  // namespace k3cli
