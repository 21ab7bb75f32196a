// Token administration: POST/GET /api/v1/tokens, DELETE /api/v1/tokens/{name} (admin).
#include "loom/backend/auth.hpp"
#include "loom/backend/router.hpp"
#include "loom/backend/services.hpp"
#include "loom/db/token_repo.hpp"

namespace loom::backend {

namespace {

nlohmann::json tokenJson(const db::TokenInfo& t) {
    nlohmann::json j{{"name", t.name}, {"role", t.role}, {"createdAt", t.createdAt},
                     {"createdBy", t.createdBy}};
    j["lastUsedAt"] = t.lastUsedAt.empty() ? nlohmann::json(nullptr) : nlohmann::json(t.lastUsedAt);
    j["revokedAt"] = t.revokedAt.empty() ? nlohmann::json(nullptr) : nlohmann::json(t.revokedAt);
    return j;
}

}  // namespace

void registerAuthRoutes(Router& router, Services& services) {
    router.add("POST", "/api/v1/tokens", Role::Admin, [](const Request& req) -> Result<Response> {
        auto body = req.jsonBody();
        if (!body) return fail(body.error());
        if (!body->is_object()) return fail(Error::invalid("expected {\"name\": ..., \"role\": ...}"));
        auto name = body->find("name");
        auto role = body->find("role");
        if (name == body->end() || !name->is_string())
            return fail(Error::invalid("name is required and must be a string", "name"));
        if (role == body->end() || !role->is_string())
            return fail(Error::invalid("role is required: viewer, operator or admin", "role"));
        auto secret = generateTokenSecret();
        auto t = db::createToken(req.db(), name->get<std::string>(), role->get<std::string>(),
                                 hashToken(secret), req.principal.name);
        if (!t) return fail(t.error());
        auto j = tokenJson(*t);
        j["token"] = secret;  // shown once
        return Response::ofJson(std::move(j), 201);
    });
    router.add("GET", "/api/v1/tokens", Role::Admin, [](const Request& req) -> Result<Response> {
        auto list = db::listTokens(req.db());
        if (!list) return fail(list.error());
        auto items = nlohmann::json::array();
        for (auto& t : *list) items.push_back(tokenJson(t));
        return Response::ofJson({{"items", std::move(items)}});
    });
    router.add("DELETE", "/api/v1/tokens/{name}", Role::Admin,
               [&services](const Request& req) -> Result<Response> {
                   auto t = db::revokeToken(req.db(), std::string(req.param("name")));
                   if (!t) return fail(t.error());
                   // Every loomd drops its token cache (this one through its own listener).
                   services.publish("tokens", {{"type", "tokens"}, {"revoked", t->name}});
                   return Response::ofJson(tokenJson(*t));
               });
}

}  // namespace loom::backend
