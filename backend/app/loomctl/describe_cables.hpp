// `loomctl describe`'s cable sections: a device's peers and the trace up the backend fabric.
#pragma once

#include <string>

#include "loom/client/client.hpp"

namespace loom::loomctl {

// `text` with each line indented by two spaces (describe's sections).
void printIndented(const std::string& text);

// "Peers:" — the device's cabled ports grouped by the device at the other end (role, number of
// links, local ports, port states).
void printPeers(client::Client& c, const std::string& device);

// "Trace:" — for a host, NIC or port (kind plural): each cabled port with its link and peer,
// then one line per fabric tier above the first switch (its uplinks, to which switches).
void printTrace(client::Client& c, const std::string& kind, const std::string& name);

}  // namespace loom::loomctl
