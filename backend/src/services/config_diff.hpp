// The diff stored with each switch config version (fabric_config_versions.diff): a line diff in
// unified style without context. Split from provisioning_service.cpp.
#pragma once

#include <string>

namespace loom::backend {

std::string lineDiff(const std::string& a, const std::string& b);

}  // namespace loom::backend
