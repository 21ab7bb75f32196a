// inventory/kinds.hpp against the migrated schema (issue 10): every column a kind's description
// names exists in its table with a type that holds the field, and every column of the table is
// described or is one of the columns every kind has (ids, name, labels, timestamps, ...).
// Against the real PostgreSQL of the test harness, after every migration.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>

#include "loom/inventory/kinds.hpp"
#include "loom/testing/postgres.hpp"

namespace {

using namespace loom::inventory;

// Columns of every inventory table that no field describes: the row's identity and bookkeeping
// (0001), the labels set by hand and the annotations (0010, 0020: one map for every kind in the
// API), the natural order's key (0021). `labels` is a spec field of the kinds whose spec sets
// it, and a column of the others (the API shows it merged with user_labels).
const std::set<std::string> kCommonColumns = {
    "id",          "name",       "sort_key",   "labels",           "user_labels",
    "annotations", "created_at", "updated_at", "resource_version",
};

// The PostgreSQL types a field's value type may be stored as.
std::set<std::string> typesFor(ValueType t) {
    switch (t) {
        case ValueType::Text:
        case ValueType::Enum:
            return {"text"};
        case ValueType::Integer:
            return {"integer", "bigint", "smallint"};
        case ValueType::Real:
            return {"double precision", "real", "numeric"};
        case ValueType::Labels:
            return {"jsonb"};
        case ValueType::Ref:
            return {"bigint"};
    }
    return {};
}

const char* typeName(ValueType t) {
    switch (t) {
        case ValueType::Text:
            return "text";
        case ValueType::Enum:
            return "enum";
        case ValueType::Integer:
            return "integer";
        case ValueType::Real:
            return "real";
        case ValueType::Labels:
            return "labels";
        case ValueType::Ref:
            return "ref";
    }
    return "?";
}

class KindsSchema : public loom::testing::PostgresTest {};

TEST_F(KindsSchema, EveryDescribedColumnExistsWithItsTypeAndEveryColumnIsDescribed) {
    auto conn = connect();
    for (Kind k : kAllKinds) {
        const std::string table(kindPlural(k));
        auto rows = conn.queryRows(
            "SELECT column_name, data_type FROM information_schema.columns "
            "WHERE table_schema = current_schema() AND table_name = '" +
            table + "' ORDER BY ordinal_position");
        ASSERT_TRUE(rows) << rows.error().toString();
        ASSERT_FALSE(rows->empty()) << "no table " << table;
        std::map<std::string, std::string> columns;
        for (const auto& r : *rows) columns[r[0]] = r[1];

        std::set<std::string> described;
        for (const FieldInfo& f : kindInfo(k).fields) {
            std::vector<std::string_view> cols;
            if (f.column.empty())
                for (const RefColumn& r : f.references()) cols.push_back(r.column);
            else
                cols.push_back(f.column);
            EXPECT_FALSE(cols.empty()) << table << "." << f.api << " names no column";
            for (std::string_view c : cols) {
                std::string col(c);
                described.insert(col);
                auto it = columns.find(col);
                if (it == columns.end()) {
                    ADD_FAILURE() << table << "." << f.api << ": column " << col
                                  << " does not exist (a migration is missing?)";
                    continue;
                }
                EXPECT_TRUE(typesFor(f.type).contains(it->second))
                    << table << "." << col << " is " << it->second << ", the field " << f.api
                    << " is " << typeName(f.type);
            }
            // A reference's columns hold the ids of the kinds it names.
            for (const RefColumn& r : f.references())
                EXPECT_TRUE(std::string(r.column).ends_with("_id"))
                    << table << "." << r.column << " (" << f.api << ")";
            // Only operational fields are patched, and only text ones (PATCH's values are text).
            if (f.patchable) {
                EXPECT_EQ(f.group, Group::Operational) << table << "." << f.api;
                EXPECT_EQ(f.type, ValueType::Text) << table << "." << f.api;
            }
            // Spec fields are what plan compares and the spec parser fills: they need a member.
            if (f.group == Group::Spec) EXPECT_TRUE(f.hasMember) << table << "." << f.api;
        }
        for (const auto& [col, type] : columns)
            EXPECT_TRUE(described.contains(col) || kCommonColumns.contains(col))
                << table << "." << col << " (" << type
                << ") is neither described in inventory/kinds.hpp nor a common column";
    }
}

TEST_F(KindsSchema, LoomctlColumnsNameFieldsOrTheApisComputedOnes) {
    // What the API adds to the fields (db/src/inventory_query.cpp): health of GPUs, switches and
    // links, a port's cable and peer, and the labels map of every kind.
    const std::set<std::string> computed = {"health", "peerPort", "link", "peer", "labels"};
    for (Kind k : kAllKinds) {
        const KindInfo& info = kindInfo(k);
        for (std::string_view list : {info.columns, info.wide}) {
            std::size_t pos = 0;
            while (pos < list.size()) {
                auto end = list.find(' ', pos);
                if (end == std::string_view::npos) end = list.size();
                std::string name(list.substr(pos, end - pos));
                pos = end + 1;
                if (name.empty()) continue;
                EXPECT_TRUE(info.find(name) || computed.contains(name))
                    << kindPlural(k) << ": loomctl column " << name << " is no field";
            }
        }
    }
}

}  // namespace
