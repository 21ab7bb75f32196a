#include "loom/inventory/error.hpp"

namespace loom {

std::string_view errcName(Errc code) {
    switch (code) {
        case Errc::InvalidArgument: return "invalid_argument";
        case Errc::NotFound: return "not_found";
        case Errc::Conflict: return "conflict";
        case Errc::PreconditionFailed: return "precondition_failed";
        case Errc::TooLarge: return "too_large";
        case Errc::Unauthorized: return "unauthorized";
        case Errc::Forbidden: return "forbidden";
        case Errc::Unavailable: return "unavailable";
        case Errc::Internal: return "internal";
    }
    return "internal";
}

int httpStatus(Errc code) {
    switch (code) {
        case Errc::InvalidArgument: return 400;
        case Errc::NotFound: return 404;
        case Errc::Conflict: return 409;
        case Errc::PreconditionFailed: return 412;
        case Errc::TooLarge: return 413;
        case Errc::Unauthorized: return 401;
        case Errc::Forbidden: return 403;
        case Errc::Unavailable: return 503;
        case Errc::Internal: return 500;
    }
    return 500;
}

std::string Error::toString() const {
    std::string s;
    if (!path.empty()) {
        s += path;
        s += ": ";
    }
    s += message;
    if (line > 0) {
        s += " (line ";
        s += std::to_string(line);
        s += ')';
    }
    return s;
}

}  // namespace loom
