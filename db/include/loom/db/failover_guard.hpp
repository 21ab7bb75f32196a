// The failover guard: cuts loomd's connections to a PostgreSQL server that is no longer the
// primary, so that they reconnect to the one that is (docs/deploy.md).
//
// On a replicated database (a libpq multi-host string with target_session_attrs=read-write or
// primary) a connection stays with the server it reached. When that server dies, its sockets
// fail and loomd reconnects to the new primary by itself. When it *hangs* instead (a frozen VM,
// a SIGSTOPped postmaster, a host whose kernel still acknowledges TCP), every query on it waits
// forever, and neither TCP keepalives nor a server-side statement_timeout end the wait. So when
// one of its connections has waited 0.5 s for an answer (or its socket closed), and every
// 30 s otherwise, the guard opens a probe connection with the same string (connect_timeout 2 s;
// checked every 250 ms, from the kernel's tcp_info of each socket): if it reaches a writable
// server other than the one a connection is on, that connection's socket is shut down, its blocked
// query fails as a lost connection (503 to the client, retried by the loops), and its owner
// reconnects — to the new primary first (preferred()). A probe that reaches no server changes
// nothing.
//
// Connections made through Database::connect() are tracked; one that libpqxx reopened by itself
// is on another socket and is left alone (its reconnect already went to the current primary).
#pragma once

#include <cstdint>
#include <string>

namespace loom::db::failover {

// Starts watching a connection's socket (a no-op for a single-host string). `owner` identifies
// it until untrack(owner).
void track(const void* owner, const std::string& conninfo, int fd, const char* host,
           const char* port);
void untrack(const void* owner);

// `conninfo` with the primary the guard saw last tried first (itself when none is known or the
// string has one host): a reconnect after a failover does not wait on the old, hung server.
std::string preferred(const std::string& conninfo);

// Connections the guard has cut, and probe connections it has made, since the process started.
std::uint64_t cuts();
std::uint64_t probes();

}  // namespace loom::db::failover
