// Inventory endpoints: list/get/patch of every kind, POST /apply (idempotent with an
// Idempotency-Key header), /summary and /hall.
#include "loom/telemetry/hall_layout.hpp"
#include "loom/telemetry/link_health_words.hpp"
#include "loom/telemetry/telemetry_hub.hpp"
#include "loom/backend/router.hpp"
#include "loom/backend/services.hpp"
#include "loom/db/event_repo.hpp"
#include "loom/db/idempotency.hpp"
#include "loom/db/inventory_query.hpp"
#include "loom/db/inventory_repository.hpp"
#include "loom/inventory/plan.hpp"
#include "loom/inventory/spec.hpp"
#include "server/gzip.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string_view>
#include <vector>

namespace loom::backend {

using inventory::Kind;

namespace {

Result<Response> objectResponse(const std::string& text) {
    auto obj = nlohmann::json::parse(text, nullptr, false);
    if (obj.is_discarded()) return fail(Error::internal("the database returned malformed JSON"));
    auto rv = obj.value("resourceVersion", std::int64_t{0});
    auto r = Response::ofJson(std::move(obj));
    r.headers.emplace_back("ETag", "\"" + std::to_string(rv) + "\"");
    return r;
}

// A rack or a host with its open events as loomd counts them once (issue 39 item 2): the
// number `GET /api/v1/events?state=open&rack=<rack>` (or `&host=<host>`) lists and counts
// (`total`), shown as is by loomctl and the web.
Result<Response> withOpenEvents(const Request& req, Kind kind, const std::string& text) {
    auto obj = nlohmann::json::parse(text, nullptr, false);
    if (obj.is_discarded() || !obj.is_object())
        return fail(Error::internal("the database returned malformed JSON"));
    db::EventFilter f;
    f.open = true;
    const auto name = obj.value("name", std::string());
    if (kind == Kind::Rack)
        f.rack = name;
    else
        f.host = name;
    auto n = db::countEvents(req.db(), f);
    if (!n) return fail(n.error());
    obj["openEvents"] = *n;
    auto rv = obj.value("resourceVersion", std::int64_t{0});
    auto r = Response::ofJson(std::move(obj));
    r.headers.emplace_back("ETag", "\"" + std::to_string(rv) + "\"");
    return r;
}

Result<std::optional<std::int64_t>> parseIfMatch(const Request& req) {
    auto h = req.header("if-match");
    if (!h || *h == "*") return std::optional<std::int64_t>{};
    std::string_view v = *h;
    if (v.size() >= 2 && v.front() == '"' && v.back() == '"') v = v.substr(1, v.size() - 2);
    if (v.rfind("W/", 0) == 0) v = v.substr(2);
    std::int64_t n = 0;
    auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
    if (ec != std::errc() || p != v.data() + v.size())
        return fail(Error::invalid("If-Match must be a quoted resourceVersion like \"7\"",
                                   "If-Match"));
    return std::optional<std::int64_t>{n};
}

// A backend link's health is the hub's word, the stream's link.health (docs/api.md, "Link
// health"): the state and open events the database holds, and what only live telemetry knows
// (no data; an end reporting down before its event is stored). One rule, so REST, the stream,
// loomctl, the console and the web say the same word of a link. The stored rule answers for
// links the hub does not carry (frontend, storage) and when it is not running.
class LiveLinkWords {
public:
    static std::optional<LiveLinkWords> of(Services& services) {
        auto* hub = services.hub();
        if (!hub) return std::nullopt;
        for (int attempt = 0; attempt < 3; ++attempt) {  // a layout swapped between the reads
            LiveLinkWords w;
            w.layout_ = hub->layout();
            if (!w.layout_) return std::nullopt;
            w.health_ = hub->packed(telemetry::Topic::LinkHealth);
            if (w.health_.size() == w.layout_->links().size()) return w;
        }
        return std::nullopt;
    }
    std::optional<std::string_view> word(std::string_view link) const {
        const auto l = layout_->linkByName(link);
        if (l == telemetry::kNoIndex || l >= health_.size()) return std::nullopt;
        return telemetry::linkHealthWord(health_[l]);
    }
    // The object's `health` set to the live word when the hub carries the link.
    std::string overlay(const std::string& text) const {
        auto obj = nlohmann::json::parse(text, nullptr, false);
        if (!obj.is_object() || !obj.contains("health") || !obj["name"].is_string()) return text;
        const auto w = word(obj["name"].get<std::string>());
        if (!w) return text;
        obj["health"] = *w;
        return obj.dump();
    }
    // The backend links whose live word passes every `health` filter of the list: a key's
    // values are alternatives, of `health__n` exclusions (db/inventory_query.cpp). A word no
    // link has passes nothing here; the stored rule rejects a misspelt one with a 400. The
    // shorter of the two lists goes to SQL: those that pass, or those that do not. (A backend
    // link applied a moment ago and not yet in the hub's layout is then left out or let in;
    // the next layout, a second later, has it.)
    db::ListQuery::LiveLinks passing(
        const std::vector<std::pair<std::string, std::string>>& filters) const {
        db::ListQuery::LiveLinks passed, failed{.names = {}, .failing = true};
        const auto& links = layout_->links();
        for (std::uint32_t l = 0; l < links.size(); ++l) {
            const auto mine =
                health_[l] <= telemetry::kLinkNotInService ? health_[l] : telemetry::kNoData;
            bool pass = true, anyPositive = false, positiveHit = false;
            for (const auto& [field, value] : filters) {
                const auto v = telemetry::parseLinkHealthWord(value);
                if (field == "health") {
                    anyPositive = true;
                    positiveHit = positiveHit || v == mine;
                } else if (field == "health__n" && v == mine) {
                    pass = false;
                }
            }
            auto& into = pass && (!anyPositive || positiveHit) ? passed : failed;
            into.names.push_back(links[l].name);
        }
        return failed.names.size() < passed.names.size() ? failed : passed;
    }

private:
    std::shared_ptr<const telemetry::HallLayout> layout_;
    std::vector<std::uint8_t> health_;
};

// A link's object with its live health word where the hub carries the link (GET and PATCH).
Result<Response> linkResponse(Services& services, const std::string& text) {
    if (auto live = LiveLinkWords::of(services)) return objectResponse(live->overlay(text));
    return objectResponse(text);
}

Result<Response> listKind(const Request& req, Kind kind, Services& services) {
    db::ListQuery q;
    q.kind = kind;
    for (auto& [k, v] : req.query) {
        if (k == "limit") {
            int n = 0;
            auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
            if (ec != std::errc() || p != v.data() + v.size())
                return fail(Error::invalid("limit must be an integer, not '" + v + "'", "limit"));
            q.limit = n;
        } else if (k == "cursor") {
            q.cursor = v;
        } else if (k == "token") {
            // the WebSocket-style ?token= is accepted on every endpoint; not a filter
        } else {
            q.filters.emplace_back(k, v);
        }
    }
    std::optional<LiveLinkWords> live;
    if (kind == Kind::Link) live = LiveLinkWords::of(services);
    if (live && std::any_of(q.filters.begin(), q.filters.end(), [](const auto& f) {
            return f.first == "health" || f.first == "health__n";
        }))
        q.liveBackendLinks = live->passing(q.filters);
    auto page = db::listObjects(req.db(), q);
    if (!page) return fail(page.error());
    if (live)
        for (auto& item : page->items) item = live->overlay(item);
    // Items are JSON texts already; splice them without decoding.
    std::string body = "{\"items\":[";
    for (std::size_t i = 0; i < page->items.size(); ++i) {
        if (i) body += ',';
        body += page->items[i];
    }
    body += ']';
    if (!page->nextCursor.empty()) body += ",\"nextCursor\":\"" + page->nextCursor + "\"";
    body += "}\n";
    if (req.header("accept").value_or("").find("yaml") != std::string_view::npos)
        return Response::ofJson(nlohmann::json::parse(body));
    return Response::text(std::move(body), "application/json");
}

// Kubernetes' qualified name, as its annotation keys: an optional DNS-subdomain prefix and '/',
// then 1-63 characters of [A-Za-z0-9._-] that start and end with a letter or digit.
bool annotationKeyValid(std::string_view key) {
    auto alnum = [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
    };
    auto slash = key.find('/');
    std::string_view name = slash == std::string_view::npos ? key : key.substr(slash + 1);
    if (name.empty() || name.size() > 63 || !alnum(name.front()) || !alnum(name.back()))
        return false;
    for (char c : name)
        if (!alnum(c) && c != '.' && c != '_' && c != '-') return false;
    if (slash == std::string_view::npos) return true;
    std::string_view prefix = key.substr(0, slash);
    if (prefix.empty() || prefix.size() > 253 || !alnum(prefix.front()) || !alnum(prefix.back()))
        return false;
    for (char c : prefix)
        if (!(c >= 'a' && c <= 'z') && !(c >= '0' && c <= '9') && c != '.' && c != '-')
            return false;
    return true;
}

Result<Response> patchKind(const Request& req, Kind kind, Services& services) {
    auto body = req.jsonBody();
    if (!body) return fail(body.error());
    if (!body->is_object()) return fail(Error::invalid("the PATCH body must be an object"));
    auto ifMatch = parseIfMatch(req);
    if (!ifMatch) return fail(ifMatch.error());
    db::ObjectPatch patch;
    patch.ifMatch = *ifMatch;
    patch.actor = req.principal.name;
    for (auto it = body->begin(); it != body->end(); ++it) {
        if (it.key() == "labels" || it.key() == "annotations") {
            const bool labels = it.key() == "labels";
            if (!it->is_object())
                return fail(Error::invalid(it.key() + " must be an object of strings", it.key()));
            for (auto l = it->begin(); l != it->end(); ++l) {
                if (!l->is_string() && !l->is_null())
                    return fail(Error::invalid(
                        std::string(labels ? "label" : "annotation") +
                            " values must be strings (null removes)",
                        it.key() + "." + l.key()));
                if (!labels && !annotationKeyValid(l.key()))
                    return fail(Error::invalid(
                        "annotation key '" + l.key() +
                            "' is not a qualified name: [prefix/]name, the name 1-63 of "
                            "[A-Za-z0-9._-] starting and ending with a letter or digit, the "
                            "prefix a DNS subdomain of at most 253",
                        it.key() + "." + l.key()));
            }
            (labels ? patch.labels : patch.annotations) = it->dump();
        } else if (it.key() == "metadata" || it.key() == "name" || it.key() == "kind" ||
                   it.key() == "resourceVersion") {
            continue;  // echoes of a GET body are tolerated
        } else {
            if (!it->is_string())
                return fail(Error::invalid(it.key() + " must be a string", it.key()));
            patch.fields.emplace_back(it.key(), it->get<std::string>());
        }
    }
    auto r = db::patchObject(req.db(), kind, std::string(req.param("name")), patch);
    if (!r) return fail(r.error());
    if (kind == Kind::Link) return linkResponse(services, *r);
    return objectResponse(*r);
}

nlohmann::json planJson(const inventory::Plan& p) {
    auto kinds = nlohmann::json::array();
    for (auto& k : inventory::summarize(p, 5)) {
        kinds.push_back({{"kind", k.kind},
                         {"creates", k.creates},
                         {"updates", k.updates},
                         {"deletes", k.deletes},
                         {"wouldDelete", k.wouldDelete},
                         {"createNames", k.createNames},
                         {"updateNames", k.updateNames},
                         {"deleteNames", k.deleteNames}});
    }
    return {{"creates", p.creates()},   {"updates", p.updates()},
            {"deletes", p.deletes()},   {"wouldDelete", p.wouldDelete()},
            {"prune", p.prune},         {"empty", p.empty()},
            {"kinds", std::move(kinds)}, {"text", inventory::formatPlan(p)}};
}

bool flag(const Request& req, std::string_view name) {
    auto v = req.queryParam(name);
    return v && (*v == "true" || *v == "1" || v->empty());
}

// Idempotency-Key: printable ASCII, 1..200 characters (a UUID fits; the header is the id).
Result<std::optional<std::string>> idempotencyKey(const Request& req) {
    auto h = req.header("idempotency-key");
    if (!h) return std::optional<std::string>{};
    if (h->empty() || h->size() > 200)
        return fail(Error::invalid("Idempotency-Key must be 1 to 200 characters", "Idempotency-Key"));
    for (char c : *h)
        if (c < 0x21 || c > 0x7e)
            return fail(Error::invalid("Idempotency-Key must be printable ASCII without spaces",
                                       "Idempotency-Key"));
    return std::optional<std::string>{std::string(*h)};
}

Response replay(const db::IdempotentAnswer& a) {
    auto body = nlohmann::json::parse(a.body, nullptr, false);
    Response r = body.is_discarded() ? Response::text(a.body, "application/json", a.status)
                                     : Response::ofJson(std::move(body), a.status);
    r.headers.emplace_back("Idempotent-Replayed", "true");
    return r;
}

Result<Response> apply(const Request& req, Services& services) {
    if (req.body.empty()) return fail(Error::invalid("the request needs a Cluster spec body"));
    auto key = idempotencyKey(req);
    if (!key) return fail(key.error());
    bool dryRun = flag(req, "dryRun");
    bool prune = flag(req, "prune");
    const std::string actor = req.principal.name.empty() ? "loomd" : req.principal.name;
    // What the key stands for: a retry must ask for the same thing. Dry runs write nothing
    // and are not recorded.
    std::string request;
    if (*key && !dryRun) {
        request = std::string("POST /api/v1/apply prune=") + (prune ? "1" : "0") + "\n";
        request.append(req.body);
        auto prior = db::findIdempotent(req.db(), actor, **key, request);
        if (!prior) return fail(prior.error());
        if (*prior) {
            if (!(*prior)->sameRequest)
                return Response::ofJson(
                    {{"error",
                      {{"code", "idempotency_key_reused"},
                       {"message", "this Idempotency-Key was used for a different apply request "
                                   "(another body or prune flag); use a new key per request"},
                       {"path", "Idempotency-Key"}}}},
                    422);
            return replay(**prior);
        }
    }
    inventory::SpecLimits limits;
    limits.maxBytes = kApplyBodyLimit;
    // The spec parser reads YAML and JSON alike, with document paths and lines in errors.
    auto desired = inventory::loadClusterSpec(req.body, limits);
    if (!desired) return fail(desired.error());
    auto snap = db::loadSnapshot(req.db());
    if (!snap) return fail(snap.error());
    auto p = inventory::plan(*desired, snap->inventory, {.prune = prune});
    nlohmann::json out{{"plan", planJson(p)}, {"applied", false}, {"dryRun", dryRun}};
    if (dryRun) return Response::ofJson(std::move(out));
    if (p.empty()) {
        if (*key) {
            if (auto r = db::recordIdempotent(req.db(), actor, **key, request, 200, out.dump()); !r)
                return fail(r.error());
        }
        return Response::ofJson(std::move(out));
    }
    auto answer = [out](const db::ApplyResult& r) {
        nlohmann::json a = out;
        a["applied"] = true;
        a["result"] = {{"created", r.created},
                       {"updated", r.updated},
                       {"deleted", r.deleted},
                       {"generation", r.generation}};
        return a;
    };
    const auto digests = inventory::contentDigests(*desired);
    db::ApplyOptions opts;
    opts.actor = actor;
    opts.expectedGeneration = snap->generation;
    opts.digests = &digests;  // kept current, so `loomd apply` of the same spec is a shortcut
    if (*key)
        opts.idempotency = db::ApplyOptions::Idempotency{
            actor, **key, request, 200,
            [answer](const db::ApplyResult& r) { return answer(r).dump(); }};
    auto r = db::applyPlan(req.db(), p, *desired, opts);
    if (!r) {
        // The same key may have committed meanwhile (a concurrent retry): its answer is ours.
        if (*key && r.error().code == Errc::Conflict) {
            if (auto prior = db::findIdempotent(req.db(), actor, **key, request);
                prior && *prior && (*prior)->sameRequest)
                return replay(**prior);
        }
        return fail(r.error());
    }
    // The name search indexes a bulk apply leaves to after its commit are built in loomd's
    // background once the live state has loaded this generation: the answer does not wait for
    // them, and lists are correct meanwhile.
    services.inventoryChanged();
    services.publish("inventory", {{"type", "inventory"}, {"generation", r->generation}});
    return Response::ofJson(answer(*r));
}

}  // namespace

void registerInventoryRoutes(Router& router, Services& services) {
    for (Kind k : inventory::kAllKinds) {
        std::string base = "/api/v1/" + std::string(inventory::kindPlural(k));
        router.add("GET", base, Role::Viewer,
                   [k, &services](const Request& r) { return listKind(r, k, services); });
        router.add("GET", base + "/{name}", Role::Viewer,
                   [k, &services](const Request& r) -> Result<Response> {
                       auto o = db::getObject(r.db(), k, std::string(r.param("name")));
                       if (!o) return fail(o.error());
                       if (k == Kind::Link) return linkResponse(services, *o);
                       if (k == Kind::Rack || k == Kind::Host) return withOpenEvents(r, k, *o);
                       return objectResponse(*o);
                   });
        router.add("PATCH", base + "/{name}", Role::Operator,
                   [k, &services](const Request& r) { return patchKind(r, k, services); });
    }
    router.add("POST", "/api/v1/apply", Role::Operator,
               [&services](const Request& r) { return apply(r, services); },
               RouteOptions{.bodyLimit = kApplyBodyLimit, .maxConcurrent = 2});
    // The summary scans every inventory table (~80 ms at 24k): computed at most once a second
    // and shared by every request in that second (a wall of dashboards polling it costs one
    // query per second, not one per viewer). It may be up to 1 s old.
    struct SummaryCache {
        std::mutex mutex;
        std::chrono::steady_clock::time_point at;
        std::string text;
    };
    auto summary = std::make_shared<SummaryCache>();
    router.add("GET", "/api/v1/summary", Role::Viewer, [summary](const Request& r) -> Result<Response> {
        std::lock_guard lock(summary->mutex);  // a miss computes once; the others wait for it
        const auto now = std::chrono::steady_clock::now();
        if (summary->text.empty() || now - summary->at >= std::chrono::seconds(1)) {
            auto s = db::inventorySummary(r.db());
            if (!s) return fail(s.error());
            summary->text = std::move(*s);
            summary->at = now;
        }
        return Response::ofJson(nlohmann::json::parse(summary->text));
    });
    // A HallLayout object is immutable (2.8 MB of JSON at 24k, 11.9 MB at 98k): rendered once
    // per object, with an ETag that is a digest of the body (the layout version alone does not
    // cover rack states), so a reconnecting console gets 304 Not Modified. The gzipped form
    // (what the console's and the browser's HTTP stacks ask for) is made once per object too,
    // when first asked: gzipping 11.9 MB per request cost ~90-150 ms of a pool thread at 98k
    // (bench/server/run_scale_live.sh). Its ETag is the plain one with "-gz": another
    // representation, another validator; If-None-Match matches either.
    struct HallCache {
        std::mutex mutex;
        std::shared_ptr<const HallLayout> layout;
        std::shared_ptr<const std::string> json, gzipped;
        std::string etag, gzEtag;
    };
    // ?format=compact (what the web dashboard asks for): names by rule, runs, states with a
    // legend (telemetry/hall_compact.cpp): 11.9 MB -> ~0.2 MB of JSON at 98k. Cached the same
    // way, under ETags of its own ("hallc-").
    auto hall = std::make_shared<HallCache>();
    auto hallCompact = std::make_shared<HallCache>();
    router.add(
        "GET", "/api/v1/hall", Role::Viewer,
        [&services, hall, hallCompact](const Request& req) -> Result<Response> {
            auto layout = services.layout();
            if (!layout)
                return fail(Error::unavailable("the hall layout is still loading; retry shortly"));
            const auto format = req.queryParam("format").value_or("full");
            if (format != "full" && format != "compact")
                return fail(Error::invalid(
                    "format must be full or compact, not '" + std::string(format).substr(0, 64) + "'", "format"));
            const bool compact = format == "compact";
            if (auto accept = req.header("accept"); accept && accept->find("yaml") != std::string_view::npos)
                return Response::ofJson(compact ? layout->toCompactJson() : layout->toJson());  // rare: rendered each time
            const auto ae = req.header("accept-encoding");
            const bool wantsGzip = ae && acceptsGzip(*ae);
            auto& cache = compact ? *hallCompact : *hall;
            std::shared_ptr<const std::string> body;
            std::string etag, gzEtag;
            {
                std::lock_guard lock(cache.mutex);
                if (cache.layout != layout) {
                    cache.json = std::make_shared<const std::string>(
                        (compact ? layout->toCompactJson() : layout->toJson()).dump());
                    cache.gzipped.reset();
                    cache.layout = layout;
                    char hex[17];
                    std::snprintf(hex, sizeof hex, "%016zx", std::hash<std::string>{}(*cache.json));
                    const std::string tag = compact ? "\"hallc-" : "\"hall-";
                    cache.etag = tag + std::string(hex) + "\"";
                    cache.gzEtag = tag + std::string(hex) + "-gz\"";
                }
                if (wantsGzip && !cache.gzipped)
                    cache.gzipped = std::make_shared<const std::string>(gzip(*cache.json, 1));
                const bool gz = wantsGzip && !cache.gzipped->empty();
                body = gz ? cache.gzipped : cache.json;
                etag = gz ? cache.gzEtag : cache.etag;
                gzEtag = cache.gzEtag;
                if (auto inm = req.header("if-none-match"); inm && (*inm == cache.etag || *inm == gzEtag)) {
                    Response r = Response::text("", "application/json", 304);
                    r.headers.push_back({"ETag", etag});
                    return r;
                }
            }
            Response r = Response::text(*body, "application/json");
            r.headers.push_back({"ETag", etag});
            if (etag == gzEtag) {
                r.headers.push_back({"Content-Encoding", "gzip"});
                r.headers.push_back({"Vary", "Accept-Encoding"});
            }
            return r;
        },
        RouteOptions{.needsDb = false});
}

}  // namespace loom::backend
