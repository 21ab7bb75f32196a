// Slurm hostlists: the compact host syntax of `scontrol show hostnames` / `squeue -o %N`.
//
//   auto hosts = expandHostlist("z1-r[001-002]-h[0-1]");
//   // z1-r001-h0 z1-r001-h1 z1-r002-h0 z1-r002-h1
//   formatHostlist(*hosts);  // "z1-r[001-002]-h[0-1]"
//
// Grammar (what slurmctld accepts for node names): a comma-separated list of expressions; an
// expression is text with any number of bracket groups, each a comma list of numbers or
// ranges `lo-hi`. A range keeps the width of its low bound (`[08-10]` is 08 09 10, `[8-10]` is
// 8 9 10). Several groups multiply, the first one outermost, as Slurm expands them. Nested
// brackets, empty groups, `hi < lo`, numbers of more than 9 digits and characters other than
// letters, digits, '.', '_' and '-' in a name are errors naming the 1-based column.
// The expansion is bounded: at most kMaxHostlistHosts names (counted before any is built), so
// `h[0-999999999]` costs nothing but its error.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "loom/inventory/error.hpp"
#include "loom/inventory/natural_order.hpp"  // naturalLess, the order of formatHostlist

namespace loom::jobs {

// 4x the hosts of the 98k reference cluster (12,288 hosts).
inline constexpr std::size_t kMaxHostlistHosts = 65'536;
inline constexpr std::size_t kMaxHostlistChars = 1 << 20;

// The names in the order Slurm lists them (duplicates kept, as scontrol keeps them).
// Errors: InvalidArgument "column N: ...", TooLarge above kMaxHostlistHosts.
Result<std::vector<std::string>> expandHostlist(std::string_view text);

// The shortest form this formatter finds of the set of names (sorted, duplicates dropped):
// names are grouped by their last number into ranges, then groups that differ only in the
// number before that are merged into a second bracket (`z1-r[001-016]-h[0-1]`). Zero padding
// is kept; expandHostlist(formatHostlist(x)) names exactly the set x (its order may differ
// from natural order when the second merge applies to some names only).
std::string formatHostlist(std::span<const std::string> names);

}  // namespace loom::jobs
