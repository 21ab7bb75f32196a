// API token secrets: how they are made and hashed. Storage is db/token_repo.hpp; the check on
// every request (with a short cache) lives in the server.
//
// A secret is "loom_" + 43 base64url characters (32 bytes from OpenSSL's RAND_bytes); the
// database keeps only its SHA-256, so a secret is shown exactly once, when it is created.
#pragma once

#include <string>
#include <string_view>

namespace loom::backend {

std::string generateTokenSecret();
std::string hashToken(std::string_view secret);  // lowercase hex SHA-256

}  // namespace loom::backend
