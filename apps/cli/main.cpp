// k3tune: the harness CLI. Builds runner variants, probes targets, runs interleaved multi-process
// benchmark sweeps into an SQLite database, compares results, and checks its own statistics.
#include <cstdlib>
#include <iostream>

#include <fmt/format.h>

#include "apps/cli/app_context.h"
#include "harness/host/farm/board.h"
#include "harness/host/farm/open_files.h"
#include "harness/host/store/sqlite.h"
#include "harness/host/targets/build_presets.h"
#include "harness/host/targets/runner_facts.h"

int main(int argc, char** argv) {
  using namespace k3cli;
  // Soft open-file limit up to the hard one, for this process and all it starts: a farm of many
  // boards holds ~10 descriptors per board (farm commands refuse a farm beyond the hard limit).
  k3farm::raise_open_file_limit();
  AppContext ctx;
  const char* env_root = std::getenv("K3TUNE_ROOT");
  ctx.root = env_root ? env_root : K3TUNE_SOURCE_DIR;
  ctx.argv.assign(argv, argv + argc);
  CLI::App app{"k3tune: autotuning and benchmarking harness for the SpacemiT K3"};
  add_k3tune_cli(app, ctx);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    std::cout << app.help();
    return kOk;
  } catch (const CLI::CallForAllHelp&) {
    std::cout << app.help("", CLI::AppFormatMode::All);
    return kOk;
  } catch (const CLI::ParseError& e) {
    std::cerr << "k3tune: " << e.what() << "\n";
    return kUsage;
  } catch (const k3bench::UserError& e) {
    std::cerr << "k3tune: " << e.what() << "\n";
    return kUsage;
  } catch (const k3store::StoreError& e) {
    std::cerr << "k3tune: " << e.what() << "\n";
    return kUsage;
  } catch (const k3targets::PresetError& e) {  // CMakePresets.json or a variant it lacks
    std::cerr << "k3tune: " << e.what() << "\n";
    return kUsage;
  } catch (const k3targets::FactsError& e) {  // a runner that cannot describe itself
    std::cerr << "k3tune: " << e.what() << "\n";
    return kUsage;
  } catch (
      const k3targets::TargetLost& e) {  // a farm board lost mid-command: measured work is kept
    std::cerr << "k3tune: " << e.what() << "\n";
    return kCellsFailed;
  } catch (const k3farm::ControllerFailure& e) {  // this machine's fault, not a board's
    std::cerr << "k3tune: " << e.what() << "\n";
    return kProblems;
  } catch (const std::exception& e) {
    std::cerr << "k3tune: internal error: " << e.what() << "\n";
    return kProblems;
  }
  return exit_code();
}
