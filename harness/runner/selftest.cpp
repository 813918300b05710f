#include "harness/runner/selftest.h"

#include <iostream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "harness/runner/errors.h"
#include "k3k/dispatch.h"
#if defined(K3_HAVE_IME2)
#include "k3k/ime2.h"
#endif

namespace k3runner {

int run_selftest(const std::string& target, bool json) {
  if (target != "ime2")
    throw UsageError("--selftest: unknown target '" + target + "' (known: ime2)");
#if !defined(K3_HAVE_IME2)
  (void)json;
  throw UnsupportedShape("--selftest ime2: ime2 layer not compiled into this binary");
#else
  if (auto why = k3k::ime2::unusable_because())
    throw UnsupportedShape("--selftest ime2: IME2 gate refused: " + *why);
  const bool emulated = k3k::ime2::emulated();
  const std::string mode =
      emulated ? "emulated: each IME2 instruction runs as its software model, so this checks "
                 "the wrappers' register plumbing, not silicon"
               : "real IME2 instructions";
  const auto cases = k3k::ime2::selftest();
  bool all = true;
  for (const auto& c : cases) all = all && c.pass;
  if (json) {
    nlohmann::json j = {{"schema", "k3bench.selftest/1"},
                        {"target", "ime2"},
                        {"emulated", emulated},
                        {"gate", k3k::ime2::gate().passed},
                        {"pass", all}};
    j["cases"] = nlohmann::json::array();
    for (const auto& c : cases) {
      nlohmann::json jc = {{"instruction", c.instruction},
                           {"case", c.name},
                           {"settles", c.settles},
                           {"relied_on", c.relied_on},
                           {"pass", c.pass}};
      jc["first_mismatch"] =
          c.pass ? nlohmann::json(nullptr)
                 : nlohmann::json{{"lane", c.first_mismatch}, {"got", c.got}, {"want", c.want}};
      j["cases"].push_back(jc);
    }
    std::cout << j.dump(2) << "\n";
  } else {
    std::cout << fmt::format("IME2 selftest ({})\ngate: {}\n", mode, k3k::ime2::gate().passed);
    std::cout << fmt::format("{:<22} {:<15} {:<10} {:<9} {:<6} {}\n", "instruction", "case",
                             "settles", "relied on", "result", "first mismatching lane");
    for (const auto& c : cases) {
      const std::string lane =
          c.pass ? "-" : fmt::format("{} (got {}, model {})", c.first_mismatch, c.got, c.want);
      std::cout << fmt::format("{:<22} {:<15} {:<10} {:<9} {:<6} {}\n", c.instruction, c.name,
                               c.settles.empty() ? "-" : c.settles, c.relied_on ? "yes" : "no",
                               c.pass ? "pass" : "FAIL", lane);
    }
    std::cout << fmt::format(
        "{} of {} cases match the model{}\n",
        [&] {
          int n = 0;
          for (const auto& c : cases) n += c.pass;
          return n;
        }(),
        cases.size(), emulated ? " (emulated)" : "");
  }
  return all ? kExitOk : kExitAccuracy;
#endif
}

}  // namespace k3runner
