// SQL helpers the provisioning repository's two files share (provisioning_repo.cpp: the plan,
// the reconciler's batches and the reads; provisioning_actions.cpp: the operator's actions).
// Internal to db/.
#pragma once

#include <pqxx/pqxx>
#include <string>
#include <vector>

#include "copy_text.hpp"
#include "loom/db/database.hpp"

namespace loom::db::detail {

// A text[] parameter (copy_text.hpp).
inline std::string arrayOf(const std::vector<std::string>& v) { return pgTextArray(v); }

// The name of the active phase plan; NotFound before any plan has been applied.
inline Result<std::string> activePlan(pqxx::transaction_base& tx) {
    auto r = tx.exec("SELECT name FROM phase_plans WHERE active");
    if (r.empty()) return fail(Error::notFound("no phase plan has been applied"));
    return col(r[0][0]);
}

}  // namespace loom::db::detail
