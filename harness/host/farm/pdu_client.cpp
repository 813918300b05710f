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

std::string check_pdu_daemon(const PduOutlet& o, double timeout_s) {
  // One of pdudaemon's three routes (any other path is a 404), with neither PDU nor port: refused
  // before anything is looked up or switched.
  const std::string url = o.daemon + "/power/control/on";
  // No --fail: the refusal is the answer wanted; the status code comes last, on its own line.
  const auto r = k3targets::run_process(
      {"curl", "--silent", "--show-error", "--max-time", fmt::format("{:g}", timeout_s),
       "--write-out", "\n%{http_code}\n", "--", url},
      k3targets::ProcessOptions::with_timeout(timeout_s + 5));
  if (r.spawn_failed) throw ControllerFailure(fmt::format("curl could not be started for {}", url));
  if (!r.ok()) {
    const std::string why = k3targets::last_line(r.err);
    return fmt::format("{}: {}", o.daemon, why.empty() ? r.failure_reason(timeout_s + 5) : why);
  }
  std::string body = r.out;
  while (!body.empty() && body.back() == '\n') body.pop_back();
  const auto cut = body.rfind('\n');
  const std::string code = cut == std::string::npos ? body : body.substr(cut + 1);
  body = cut == std::string::npos ? "" : body.substr(0, cut);
  while (!body.empty() && body.back() == '\n') body.pop_back();
  if (code == "500" && body == "Invalid request") return "";
  return fmt::format("{}: HTTP {} '{}' is not pdudaemon's answer", o.daemon, code,
                     k3targets::last_line(body));
}

}  // namespace k3farm
