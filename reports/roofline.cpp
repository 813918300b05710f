#include "reports/roofline.h"

#include <fmt/format.h>

namespace k3reports {

Roofline build_roofline(const k3verdict::RunData& run, const std::vector<Board>& boards,
                        const std::optional<k3store::TargetProbeRecord>& probe) {
  Roofline r;
  r.probe = probe;
  if (const Board* b = board_for(boards, run)) {
    r.board = b->name;
    r.board_file = b->file;
    r.ceilings = b->ceilings;
  } else {
    r.notes.push_back(fmt::format(
        "no board file matches this run (marchid {}, arch {}, cpu '{}'): measured ceilings only",
        run.marchid.empty() ? "none" : run.marchid, run.arch.empty() ? "unknown" : run.arch,
        run.cpu_model));
  }
  if (probe) {
    const std::string when =
        fmt::format("k3tune probe --target {} at {}", probe->target, probe->measured_at);
    if (probe->membw_read_gbps)
      r.ceilings.push_back(
          {"streaming read (probe)", "bandwidth", *probe->membw_read_gbps, "measured", when});
    if (probe->peak_f32_gflops)
      r.ceilings.push_back(
          {"f32 multiply-add peak (probe)", "compute", *probe->peak_f32_gflops, "measured", when});
    if (probe->peak_i16_gops)
      r.ceilings.push_back(
          {"i16 multiply-add peak (probe)", "compute", *probe->peak_i16_gops, "measured", when});
  } else {
    r.notes.push_back(fmt::format(
        "no probe of target {} on '{}' in the database: run `k3tune probe --target {}` for the "
        "measured ceilings",
        run.target, run.cpu_model, run.target));
    for (const auto& c : run.cells) {
      if (c.op != "membw" || !c.ok || !c.mean_ns || !c.bytes_per_call ||
          c.build_hash != run.build_hash)
        continue;
      r.ceilings.push_back({"membw cell of this run: " + c.label, "bandwidth",
                            *c.bytes_per_call / *c.mean_ns, "measured", "run " + run.run_uuid});
      break;
    }
  }
  for (const auto& c : run.cells) {
    if (c.build_hash != run.build_hash || !c.ok || !c.mean_ns || !c.bytes_per_call ||
        !c.ops_per_call)
      continue;
    RooflinePoint p;
    p.label = c.label;
    p.op = c.op;
    p.path = c.path;
    p.mean_ns = *c.mean_ns;
    p.intensity = *c.ops_per_call / *c.bytes_per_call;
    p.gops = *c.ops_per_call / *c.mean_ns;
    p.gbps = *c.bytes_per_call / *c.mean_ns;
    r.points.push_back(p);
  }
  if (r.points.empty())
    r.notes.push_back("no cell of this run reports its bytes and operations per call");
  return r;
}

}  // namespace k3reports
