// The lab's PDU daemon (pdudaemon, as LAVA labs run it) asked to power-cycle one outlet over its
// HTTP listener: GET <daemon>/power/control/reboot?hostname=<pdu>&port=<outlet>&delay=<s>. The
// daemon answers at once ("OK - accepted request") and switches the outlet off, then on again
// after the delay, on its own time. The request goes through Debian's curl client.
#pragma once

#include <string>

#include "harness/host/farm/inventory.h"

namespace k3farm {

// The URL of a reboot request for `outlet`.
std::string pdu_reboot_url(const PduOutlet& outlet);

// Asks the daemon to reboot the outlet. Returns "" when it accepted the request, else one line
// saying why not (no answer within `timeout_s`, an HTTP error, another answer than "OK ...").
// Throws ControllerFailure (board.h) when curl could not be started here.
std::string request_pdu_reboot(const PduOutlet& outlet, double timeout_s = 10);

// Whether the outlet's daemon answers as pdudaemon does, without switching anything: pdudaemon
// has no status request, and it switches on any request that names a PDU and a port, so the
// question is its "on" request naming neither, which pdudaemon refuses with HTTP 500 "Invalid
// request".
// The PDU name and outlet are therefore not checked here. Returns "" when pdudaemon answered,
// else one line saying why not (no answer within `timeout_s`, another server's answer). Throws
// ControllerFailure (board.h) when curl could not be started here.
std::string check_pdu_daemon(const PduOutlet& outlet, double timeout_s = 10);

}  // namespace k3farm
