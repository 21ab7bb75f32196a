// loom::Error and loom::Result: how every domain and parsing function reports failure.
//
// An Error carries a machine-readable code (mapped to HTTP statuses and exit codes by the
// front ends), a human message, and, for input errors, the place in the offending document:
// a path such as `spec.zones[2].racks` and a 1-based line (0 when unknown).
//
//   Result<Spec> r = parseSpec(text);
//   if (!r) std::cerr << r.error().toString() << '\n';  // spec.zones[2].racks: must be > 0 (line 14)
#pragma once

#include <expected>
#include <string>
#include <string_view>

namespace loom {

enum class Errc {
    InvalidArgument,     // bad input: 400 / exit 2
    NotFound,            // 404
    Conflict,            // concurrent change, illegal transition: 409
    PreconditionFailed,  // stale resource version: 412
    TooLarge,            // oversize input: 413
    Unauthorized,        // 401
    Forbidden,           // 403
    Unavailable,         // database or dependency down: 503
    Internal,            // a bug: 500
};

std::string_view errcName(Errc code);  // "invalid_argument", "not_found", ...
int httpStatus(Errc code);

struct Error {
    Errc code = Errc::Internal;
    std::string message;
    std::string path;  // document path, e.g. "spec.zones[2].racks"; empty if none
    int line = 0;      // 1-based line in the document; 0 if unknown

    // "spec.zones[2].racks: must be > 0 (line 14)", or just the message without a path.
    std::string toString() const;

    static Error invalid(std::string message, std::string path = {}, int line = 0) {
        return Error{Errc::InvalidArgument, std::move(message), std::move(path), line};
    }
    static Error notFound(std::string message) { return Error{Errc::NotFound, std::move(message)}; }
    static Error conflict(std::string message) { return Error{Errc::Conflict, std::move(message)}; }
    static Error internal(std::string message) { return Error{Errc::Internal, std::move(message)}; }
    static Error unavailable(std::string message) {
        return Error{Errc::Unavailable, std::move(message)};
    }
};

template <class T>
using Result = std::expected<T, Error>;

// Shorthand for returning an error from a function returning Result<T>.
inline std::unexpected<Error> fail(Error e) { return std::unexpected<Error>(std::move(e)); }

}  // namespace loom
