// Every transaction that changes what the live views show (inventory, rack/host/GPU/link
// states, phases) announces it in the same transaction: PostgreSQL delivers a NOTIFY only when
// its transaction commits, to every loomd LISTENing on the stream channel — this process's own
// Notifier included — and each reloads its live state (Server: coalesced, within a second).
// So `loomd apply` from a shell, an operator action on another loomd and the reconciler all
// reach every console without knowing about each other.
#pragma once

#include <pqxx/transaction_base>

#include <string>
#include <string_view>

#include "loom/db/notify.hpp"

namespace loom::db {

inline void notifyLiveChange(pqxx::transaction_base& tx, std::string_view source) {
    // NOTIFY folds identical payloads of one transaction into one.
    tx.exec_params("SELECT pg_notify($1, $2)", std::string(kStreamChannel),
                   std::string(kLiveTopic) + "\n{\"source\":\"" + std::string(source) + "\"}");
}

}  // namespace loom::db
