// Natural order of names, the one used everywhere a name list is sorted: loomctl's --sort-by,
// Slurm hostlists (jobs), and the API's lists, which PostgreSQL sorts by naturalSortKey().
//
// Digit runs compare as numbers ("p2" < "p10", "z1-r2" < "z1-r10"); equal numbers compare by
// the run's length ("h1" before "h01"); everything else byte by byte (unsigned).
//
//   std::sort(v.begin(), v.end(), [](auto& a, auto& b) { return loom::naturalLess(a, b); });
//   row.sort_key = loom::naturalSortKey(row.name);  // bytewise order == naturalLess order
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace loom {

bool naturalLess(std::string_view a, std::string_view b);

// A key whose bytewise order (memcmp, PostgreSQL's COLLATE "C") is exactly naturalLess's order,
// and distinct for distinct names. Each digit run becomes its value's length, the value's
// digits without leading zeros, and the count of leading zeros; lengths and counts are written
// with digit characters, so a run still compares with a non-digit byte as a digit does:
// "z1-r010" -> "z110-r2100" ("1"+"1"+"0", "-r", "2"+"10"+"1"). Other bytes are kept as they are.
std::string naturalSortKey(std::string_view name);
// The same key appended to `out` (apply writes one per COPY row into a reused buffer).
void appendNaturalSortKey(std::string& out, std::string_view name);

// `names` in natural order without repeats, sorted by their keys: one memcmp per comparison,
// where naturalLess walks long shared prefixes (16,384 hosts of 128 characters) byte by byte
// at each of the sort's ~n log n comparisons.
std::vector<std::string> naturallySortedUnique(std::vector<std::string> names);

}  // namespace loom
