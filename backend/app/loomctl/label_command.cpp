// `label KIND NAME key=value... key-... [--overwrite]`, as kubectl's: labels set by hand (or by
// automation) are the object's operational labels; an apply of the cluster spec never reverts
// them, and a key the spec sets is refused by loomd (409: change it in the spec).
// `annotate KIND NAME key=value... key-... [--overwrite]`, the same for annotations: notes the
// spec never sets (a ticket, the last RMA), at most 256 KiB per object.
#include "loomctl/commands.hpp"
#include "loomctl/context.hpp"

#include <iostream>
#include <memory>

namespace loom::loomctl {

using nlohmann::json;

namespace {

struct LabelOptions {
    std::string field;  // "labels" or "annotations"
    std::string kind, name;
    std::vector<std::string> changes;
    bool overwrite = false;
};

void runLabel(const LabelOptions& o) {
    auto kind = resolveKind(o.kind);
    if (!kind) failWith(Error::invalid("unknown kind \"" + o.kind + "\"; kinds: " + kindList()));
    json patch = json::object();
    for (const auto& c : o.changes) {
        if (c.size() > 1 && c.back() == '-' && c.find('=') == std::string::npos) {
            patch[c.substr(0, c.size() - 1)] = nullptr;
            continue;
        }
        auto eq = c.find('=');
        if (eq == std::string::npos || eq == 0)
            failWith(Error::invalid("expected key=value or key- (to remove), got \"" + c + "\""));
        patch[c.substr(0, eq)] = c.substr(eq + 1);
    }
    auto client = makeClient();
    const std::string target = "/api/v1/" + *kind + "/" + client::urlEncode(o.name);
    auto obj = orExit(client.getJson(target), client);
    const json labels = obj.value(o.field, json::object());
    if (!o.overwrite)
        for (auto it = patch.begin(); it != patch.end(); ++it)
            if (!it.value().is_null() && labels.contains(it.key()) && labels[it.key()] != it.value())
                failWith(Error::conflict("'" + it.key() + "' already has a value (" +
                                         labels[it.key()].get<std::string>() +
                                         "); use --overwrite to change it"));
    client::RequestOptions req;
    req.body = json{{o.field, patch}}.dump();
    req.contentType = "application/json";
    // If-Match: a change made by someone else since the GET is a 412, not silently merged.
    req.headers.emplace_back("If-Match", "\"" + client::field(obj, "resourceVersion") + "\"");
    orExit(client.call("PATCH", target, std::move(req)), client);
    std::cout << singularKind(*kind) << '/' << o.name
              << (o.field == "labels" ? " labeled\n" : " annotated\n");
}

void addMetadataCommand(CLI::App& app, const std::string& verb, const std::string& field,
                        const std::string& help) {
    auto o = std::make_shared<LabelOptions>();
    o->field = field;
    auto* cmd = app.add_subcommand(verb, help);
    cmd->add_option("kind", o->kind, "kind, singular or plural")->required();
    cmd->add_option("name", o->name, "object name")->required();
    cmd->add_option("changes", o->changes, "key=value to set, key- to remove")->required();
    cmd->add_flag("--overwrite", o->overwrite,
                  "change a " + field.substr(0, field.size() - 1) +
                      " that already has another value");
    cmd->callback([o] { runLabel(*o); });
}

}  // namespace

void addLabelCommand(CLI::App& app) {
    addMetadataCommand(
        app, "label", "labels",
        "Set or remove labels by hand (key=value, key-); applies of the spec keep them");
    addMetadataCommand(app, "annotate", "annotations",
                       "Set or remove annotations (key=value, key-): notes the spec never sets, "
                       "kept across applies");
}

}  // namespace loom::loomctl
