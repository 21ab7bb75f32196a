// kubectl's JSONPath templates (`-o jsonpath=...`, `--sort-by`), the subset its users reach for:
//
//   {.name}  {.labels.owner}  {.items[0].name}  {.items[-1]}  {.items[*].name}  {$.items[*]}
//   {range .items[*]}{.name}{"\t"}{.state}{"\n"}{end}   {['key.with.dots']}
//
// Text outside braces is printed as it is; several results of one expression are joined by a
// space; strings print raw, other values as JSON; a missing key prints nothing (kubectl's
// --allow-missing-template-keys=true). Not supported: filters [?()], recursive descent (..),
// slices [a:b] and unions [a,b] -- they are an error naming the column, never silently wrong.
#include "loom/client/client.hpp"

#include <algorithm>
#include <cstdlib>

namespace loom::client {
namespace {

using nlohmann::json;

struct Step {
    enum Kind { Field, Index, All } kind = Field;
    std::string field;
    long index = 0;
};

struct Node {
    enum Kind { Text, Path, Range } kind = Text;
    std::string text;         // Text: literal output
    bool fromRoot = false;    // Path/Range: starts at $ rather than the current object
    std::vector<Step> steps;  // Path/Range
    std::vector<Node> body;   // Range
};

Error bad(std::string_view tmpl, std::size_t at, const std::string& what) {
    return Error::invalid("jsonpath: " + what + " at column " + std::to_string(at + 1) + " of '" +
                              std::string(tmpl) + "'",
                          "jsonpath");
}

// One expression between braces, without them: ".a.b[*]", "$.x", "range .items[*]", "end",
// or a string literal "\n".
Result<Node> parseExpr(std::string_view tmpl, std::size_t start, std::string_view e) {
    Node n;
    std::size_t i = 0;
    auto skipSpace = [&] {
        while (i < e.size() && e[i] == ' ') ++i;
    };
    skipSpace();
    if (i < e.size() && e[i] == '"') {  // a string literal
        n.kind = Node::Text;
        for (++i; i < e.size() && e[i] != '"'; ++i) {
            if (e[i] == '\\' && i + 1 < e.size()) {
                char c = e[++i];
                n.text += c == 'n' ? '\n' : c == 't' ? '\t' : c == 'r' ? '\r' : c;
            } else {
                n.text += e[i];
            }
        }
        if (i >= e.size()) return fail(bad(tmpl, start + i, "unterminated string"));
        return n;
    }
    n.kind = Node::Path;
    if (e.substr(i, 6) == "range ") {
        n.kind = Node::Range;
        i += 6;
        skipSpace();
    }
    if (i < e.size() && e[i] == '$') {
        n.fromRoot = true;
        ++i;
    }
    while (i < e.size()) {
        if (e[i] == ' ') {
            skipSpace();
            if (i < e.size()) return fail(bad(tmpl, start + i, "unexpected text after the path"));
            break;
        }
        if (e[i] == '.') {
            if (i + 1 < e.size() && e[i + 1] == '.')
                return fail(bad(tmpl, start + i, "recursive descent (..) is not supported"));
            std::size_t j = ++i;
            while (j < e.size() && e[j] != '.' && e[j] != '[' && e[j] != ' ') ++j;
            if (j > i) n.steps.push_back(Step{Step::Field, std::string(e.substr(i, j - i)), 0});
            i = j;
        } else if (e[i] == '[') {
            auto close = e.find(']', i);
            if (close == std::string_view::npos) return fail(bad(tmpl, start + i, "missing ']'"));
            std::string_view in = e.substr(i + 1, close - i - 1);
            if (in == "*") {
                n.steps.push_back(Step{Step::All, {}, 0});
            } else if (in.size() >= 2 && (in.front() == '\'' || in.front() == '"') && in.back() == in.front()) {
                n.steps.push_back(Step{Step::Field, std::string(in.substr(1, in.size() - 2)), 0});
            } else {
                std::string num(in);
                char* end = nullptr;
                long v = std::strtol(num.c_str(), &end, 10);
                if (num.empty() || *end != '\0')
                    return fail(bad(tmpl, start + i + 1,
                                    "'[" + num + "]' is not supported (only [N], [-N], [*] and ['key'])"));
                n.steps.push_back(Step{Step::Index, {}, v});
            }
            i = close + 1;
        } else {
            return fail(bad(tmpl, start + i, std::string("unexpected '") + e[i] + "'"));
        }
    }
    return n;
}

// The template as a tree; `{range ...}` nests until its `{end}`.
Result<std::vector<Node>> parseTemplate(std::string_view t) {
    std::vector<std::vector<Node>> stack(1);
    std::vector<Node> ranges;  // the open ranges (their bodies are on the stack)
    std::size_t i = 0;
    while (i < t.size()) {
        if (t[i] != '{') {
            auto next = t.find('{', i);
            if (next == std::string_view::npos) next = t.size();
            if (auto stray = t.substr(i, next - i).find('}'); stray != std::string_view::npos)
                return fail(bad(t, i + stray, "'}' without '{'"));
            stack.back().push_back(Node{Node::Text, std::string(t.substr(i, next - i)), false, {}, {}});
            i = next;
            continue;
        }
        // The closing brace, skipping quoted strings (which may hold braces).
        std::size_t j = i + 1;
        bool quoted = false;
        for (; j < t.size(); ++j) {
            if (t[j] == '\\' && quoted) {
                ++j;
                continue;
            }
            if (t[j] == '"') quoted = !quoted;
            if (t[j] == '}' && !quoted) break;
        }
        if (j >= t.size()) return fail(bad(t, i, "'{' without '}'"));
        std::string_view expr = t.substr(i + 1, j - i - 1);
        while (!expr.empty() && expr.back() == ' ') expr.remove_suffix(1);
        if (expr == "end" || expr == " end") {
            if (ranges.empty()) return fail(bad(t, i, "{end} without {range}"));
            Node r = std::move(ranges.back());
            ranges.pop_back();
            r.body = std::move(stack.back());
            stack.pop_back();
            stack.back().push_back(std::move(r));
        } else {
            auto n = parseExpr(t, i + 1, expr);
            if (!n) return fail(n.error());
            if (n->kind == Node::Range) {
                ranges.push_back(std::move(*n));
                stack.emplace_back();
            } else {
                stack.back().push_back(std::move(*n));
            }
        }
        i = j + 1;
    }
    if (!ranges.empty()) return fail(bad(t, t.size() - 1, "{range} without {end}"));
    return std::move(stack.front());
}

std::vector<const json*> select(const std::vector<Step>& steps, const json* start) {
    std::vector<const json*> cur{start};
    for (const auto& s : steps) {
        std::vector<const json*> next;
        for (const json* v : cur) {
            switch (s.kind) {
                case Step::Field:
                    if (v->is_object())
                        if (auto it = v->find(s.field); it != v->end()) next.push_back(&*it);
                    break;
                case Step::Index:
                    if (v->is_array()) {
                        long n = static_cast<long>(v->size());
                        long k = s.index < 0 ? n + s.index : s.index;
                        if (k >= 0 && k < n) next.push_back(&(*v)[static_cast<std::size_t>(k)]);
                    }
                    break;
                case Step::All:
                    if (v->is_array() || v->is_object())
                        for (const auto& e : *v) next.push_back(&e);
                    break;
            }
        }
        cur = std::move(next);
    }
    return cur;
}

void eval(const std::vector<Node>& nodes, const json& root, const json& here, std::string& out) {
    for (const auto& n : nodes) {
        if (n.kind == Node::Text) {
            out += n.text;
            continue;
        }
        auto values = select(n.steps, n.fromRoot ? &root : &here);
        if (n.kind == Node::Range) {
            for (const json* v : values) eval(n.body, root, *v, out);
            continue;
        }
        bool first = true;
        for (const json* v : values) {
            if (!first) out += ' ';
            first = false;
            out += v->is_string() ? v->get<std::string>() : v->is_null() ? "" : v->dump();
        }
    }
}

}  // namespace

Result<std::string> renderJsonPath(const json& doc, std::string_view tmpl) {
    auto nodes = parseTemplate(tmpl);
    if (!nodes) return fail(nodes.error());
    std::string out;
    eval(*nodes, doc, doc, out);
    return out;
}

Result<void> sortByJsonPath(std::vector<json>& items, std::string_view expr) {
    std::string tmpl(expr);
    if (tmpl.empty() || tmpl.front() != '{') tmpl = "{" + tmpl + "}";
    auto nodes = parseTemplate(tmpl);
    if (!nodes) return fail(nodes.error());
    if (nodes->size() != 1 || (*nodes)[0].kind != Node::Path)
        return fail(Error::invalid("--sort-by takes one path such as .name or {.labels.owner}", "sort-by"));
    const Node& path = (*nodes)[0];
    std::vector<std::pair<json, std::size_t>> keys;
    keys.reserve(items.size());
    for (std::size_t i = 0; i < items.size(); ++i) {
        auto v = select(path.steps, &items[i]);
        keys.emplace_back(v.empty() ? json() : *v.front(), i);
    }
    std::stable_sort(keys.begin(), keys.end(), [](const auto& a, const auto& b) {
        const json &x = a.first, &y = b.first;
        if (x.is_number() && y.is_number()) return x.get<double>() < y.get<double>();
        if (x.is_null() != y.is_null()) return y.is_null();  // missing values last
        return naturalLess(x.is_string() ? x.get<std::string>() : x.dump(),
                           y.is_string() ? y.get<std::string>() : y.dump());
    });
    std::vector<json> sorted;
    sorted.reserve(items.size());
    for (auto& [k, i] : keys) sorted.push_back(std::move(items[i]));
    items = std::move(sorted);
    return {};
}

}  // namespace loom::client
