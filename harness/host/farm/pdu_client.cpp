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

namespace {

// What one GET brought back: why nothing came (curl could not connect, or gave up at the
// timeout), or the HTTP status and the body (trailing newlines dropped).
struct HttpAnswer {
  std::string failure;
  std::string status;
  std::string body;
};

// A GET with curl, the HTTP client every farm host has. No --fail: an error status is an answer
// (pdudaemon's words come in its body); the status comes last, on its own line.
HttpAnswer http_get(const std::string& url, double timeout_s) {
  const auto r = k3targets::run_process(
      {"curl", "--silent", "--show-error", "--max-time", fmt::format("{:g}", timeout_s),
       "--write-out", "\n%{http_code}\n", "--", url},
      k3targets::ProcessOptions::with_timeout(timeout_s + 5));
  if (r.spawn_failed) throw ControllerFailure(fmt::format("curl could not be started for {}", url));
  HttpAnswer a;
  if (!r.ok()) {
    const std::string why = k3targets::last_line(r.err);
    a.failure = why.empty() ? r.failure_reason(timeout_s + 5) : why;
    return a;
  }
  auto trim = [](std::string t) {
    while (!t.empty() && t.back() == '\n') t.pop_back();
    return t;
  };
  const std::string out = trim(r.out);
  const auto cut = out.rfind('\n');
  a.status = cut == std::string::npos ? out : out.substr(cut + 1);
  a.body = cut == std::string::npos ? "" : trim(out.substr(0, cut));
  return a;
}

}  // namespace

std::string request_pdu_reboot(const PduOutlet& o, double timeout_s) {
  const std::string url = pdu_reboot_url(o);
  const HttpAnswer a = http_get(url, timeout_s);
  const std::string answer = k3targets::last_line(a.body);
  if (!a.failure.empty()) return fmt::format("{}: {}", url, a.failure);
  if (a.status != "200")
    return fmt::format("{}: HTTP {}{}", url, a.status, answer.empty() ? "" : " (" + answer + ")");
  if (answer.rfind("OK", 0) != 0) return fmt::format("{}: answered '{}'", url, answer);
  return "";
}

std::string check_pdu_daemon(const PduOutlet& o, double timeout_s) {
  // One of pdudaemon's three routes (any other path is a 404), with neither PDU nor port: refused
  // before anything is looked up or switched.
  const HttpAnswer a = http_get(o.daemon + "/power/control/on", timeout_s);
  if (!a.failure.empty()) return fmt::format("{}: {}", o.daemon, a.failure);
  if (a.status == "500" && a.body == "Invalid request") return "";
  return fmt::format("{}: HTTP {} '{}' is not pdudaemon's answer", o.daemon, a.status,
                     k3targets::last_line(a.body));
}

}  // namespace k3farm
