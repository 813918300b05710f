#include "harness/host/farm/pdu_client.h"

#include <fmt/format.h>

#include "harness/host/farm/board.h"
#include "harness/host/targets/process.h"

namespace k3farm {

std::string pdu_reboot_url(const PduOutlet& o) {
  // The inventory keeps the name to letters, digits and '_.:-': nothing to escape in a query.
  return fmt::format("{}/power/control/reboot?hostname={}&port={}&delay={:g}", o.daemon, o.name,
                     o.outlet, o.delay_s);
}

std::string request_pdu_reboot(const PduOutlet& o, double timeout_s) {
  const std::string url = pdu_reboot_url(o);
  // --fail-with-body: an HTTP error exits non-zero and still shows the daemon's words.
  const auto r = k3targets::run_process({"curl", "--silent", "--show-error", "--fail-with-body",
                                         "--max-time", fmt::format("{:g}", timeout_s), "--", url},
                                        k3targets::ProcessOptions::with_timeout(timeout_s + 5));
  if (r.spawn_failed) throw ControllerFailure(fmt::format("curl could not be started for {}", url));
  const std::string answer = k3targets::last_line(r.out);
  if (!r.ok())
    return fmt::format("{}: {}{}", url, r.failure_reason(timeout_s + 5),
                       answer.empty() ? "" : " (" + answer + ")");
  if (answer.rfind("OK", 0) != 0) return fmt::format("{}: answered '{}'", url, answer);
  return "";
}

}  // namespace k3farm
