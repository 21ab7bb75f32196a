// Bad documents: each must be rejected with an exact message, document path and line, never
// with a crash or an escaped exception.
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "loom/inventory/spec.hpp"

namespace loom::inventory {
namespace {

// A minimal valid document; the cases below change one thing in it. Line numbers matter.
constexpr const char* kBase = R"(apiVersion: loom/v1
kind: Cluster
metadata:
  name: t
spec:
  site:
    name: lab
  models:
    hosts:
      - name: gt
        gpus: 8
    switches:
      - name: sw
        ports: 64
  zones:
    - rows: 2
      racks: 4
      hostsPerRack: 2
  fabric:
    type: roce
    rtsw:
      model: sw
      uplinks: 4
    ctsw:
      model: sw
      perZone: 2
)";

std::string with(std::string_view from, std::string_view to) {
    std::string s = kBase;
    auto pos = s.find(from);
    EXPECT_NE(pos, std::string::npos) << from;
    if (pos != std::string::npos) s.replace(pos, from.size(), to);
    return s;
}

struct BadDoc {
    const char* name;
    std::string yaml;
    std::string message;
    std::string path;
    int line;
    Errc code = Errc::InvalidArgument;
};

class SpecErrors : public ::testing::TestWithParam<BadDoc> {};

TEST(SpecErrorsBase, BaseDocumentIsValid) {
    auto inv = loadClusterSpec(kBase);
    ASSERT_TRUE(inv) << inv.error().toString();
    EXPECT_EQ(inv->hosts.size(), 8u);
    EXPECT_EQ(inv->zones[0].name, "z1");
}

TEST_P(SpecErrors, RejectedWithPathAndLine) {
    const BadDoc& c = GetParam();
    auto inv = loadClusterSpec(c.yaml);
    ASSERT_FALSE(inv) << c.name << " was accepted";
    EXPECT_EQ(inv.error().code, c.code) << inv.error().toString();
    EXPECT_EQ(inv.error().message, c.message);
    EXPECT_EQ(inv.error().path, c.path);
    EXPECT_EQ(inv.error().line, c.line);
}

const BadDoc kBadDocs[] = {
    {"typo_key", with("      racks: 4", "      rakcs: 4"), R"(unknown key; did you mean "racks"?)",
     "spec.zones[0].rakcs", 17},
    {"typo_top", with("metadata:", "metdata:"), R"(unknown key; did you mean "metadata"?)",
     "metdata", 3},
    {"unknown_key_far", with("    type: roce", "    type: roce\n    colour: blue"),
     "unknown key; valid keys: type, rtsw, ctsw, atsw", "spec.fabric.colour", 21},
    {"racks_string", with("racks: 4", "racks: \"ten\""), R"(must be an integer, got string "ten")",
     "spec.zones[0].racks", 17},
    {"racks_quoted_number", with("racks: 4", "racks: \"4\""),
     R"(must be an integer, got string "4")", "spec.zones[0].racks", 17},
    {"racks_str_tag", with("racks: 4", "racks: !!str 4"),
     R"(must be an integer, got "4" tagged tag:yaml.org,2002:str)", "spec.zones[0].racks", 17},
    {"racks_custom_tag", with("racks: 4", "racks: !count 4"),
     R"(must be an integer, got "4" tagged !count)", "spec.zones[0].racks", 17},
    // yaml-cpp marks an empty value with the next line; the error names the key's line.
    {"racks_empty", with("racks: 4", "racks:"), "must be an integer, got null",
     "spec.zones[0].racks", 17},
    {"description_nul", with("    name: lab\n", "    name: lab\n    description: \"a\\0b\"\n"),
     "the value contains the control character 0x00 at byte 1", "spec.site.description", 8},
    {"description_control",
     with("    name: lab\n",
          "    name: lab\n    description: \"a\x01"
          "b\"\n"),
     "the value contains the control character 0x01 at byte 1", "spec.site.description", 8},
    {"description_not_utf8", with("    name: lab\n", "    name: lab\n    description: caf\xe9\n"),
     "the value is not valid UTF-8 at byte 3", "spec.site.description", 8},
    {"label_value_nul", with("    name: lab\n", "    name: lab\n    labels: {owner: \"x\\0\"}\n"),
     "the value contains the control character 0x00 at byte 1", "spec.site.labels.owner", 8},
    {"racks_list", with("racks: 4", "racks: [4]"), "must be an integer, got a list",
     "spec.zones[0].racks", 17},
    {"racks_zero", with("racks: 4", "racks: 0"), "must be > 0", "spec.zones[0].racks", 17},
    {"racks_negative", with("racks: 4", "racks: -3"), "must be > 0", "spec.zones[0].racks", 17},
    {"racks_absurd", with("racks: 4", "racks: 100000"), "must be <= 8192", "spec.zones[0].racks",
     17},
    {"racks_overflow", with("racks: 4", "racks: 99999999999999999999999"), "must be <= 8192",
     "spec.zones[0].racks", 17},
    {"racks_not_multiple_of_rows", with("racks: 4", "racks: 5"), "must be a multiple of rows (2)",
     "spec.zones[0].racks", 17},
    {"hosts_per_rack_negative", with("hostsPerRack: 2", "hostsPerRack: -1"), "must be >= 0",
     "spec.zones[0].hostsPerRack", 18},
    {"api_version", with("loom/v1", "loom/v2"),
     R"(unsupported apiVersion "loom/v2"; expected "loom/v1")", "apiVersion", 1},
    {"kind", with("kind: Cluster", "kind: Rack"), R"(kind must be "Cluster", got "Rack")", "kind",
     2},
    {"missing_spec_key", with("  zones:\n", "  zonez:\n"), R"(unknown key; did you mean "zones"?)",
     "spec.zonez", 15},
    {"missing_required", with("      uplinks: 4\n", ""), "missing required key",
     "spec.fabric.rtsw.uplinks", 22},
    {"site_not_map", with("  site:\n    name: lab", "  site: lab"), R"(must be a map, got "lab")",
     "spec.site", 6},
    {"unknown_host_model", with("hostsPerRack: 2", "hostsPerRack: 2\n      hostModel: dgx"),
     R"(unknown host model "dgx"; known: gt)", "spec.zones[0].hostModel", 19},
    {"unknown_switch_model", with("    rtsw:\n      model: sw", "    rtsw:\n      model: nope"),
     R"(unknown switch model "nope"; known: sw)", "spec.fabric.rtsw.model", 22},
    {"duplicate_switch_model",
     with("        ports: 64", "        ports: 64\n      - name: sw\n        ports: 32"),
     R"(duplicate switch model "sw" (first at line 13))", "spec.models.switches[1].name", 15},
    {"duplicate_key", with("      racks: 4", "      racks: 4\n      racks: 8"), "duplicate key",
     "spec.zones[0].racks", 18},
    {"more_cables_than_ports", with("ports: 64", "ports: 16"),
     R"(an rtsw in zone z1 (16 downlinks + 4 uplinks) needs 20 ports but switch model "sw" has 16)",
     "spec.fabric.rtsw", 22},
    {"uplinks_not_divisible", with("uplinks: 4", "uplinks: 3"),
     "must be a multiple of ctsw.perZone (2) so every CTSW gets the same number of links from each "
     "RTSW",
     "spec.fabric.rtsw.uplinks", 23},
    {"fabric_type", with("type: roce", "type: ethernet"),
     R"(must be "roce" or "infiniband", got "ethernet")", "spec.fabric.type", 20},
    {"ib_key_on_roce", with("    type: roce", "    type: roce\n    leaf: {}"),
     "unknown key; valid keys: type, rtsw, ctsw, atsw", "spec.fabric.leaf", 21},
    {"backend_nics_not_gpus", with("        gpus: 8", "        gpus: 8\n        backendNics: 4"),
     "must equal gpus (8): one backend NIC per GPU, NIC i on rail i",
     "spec.models.hosts[0].backendNics", 12},
    {"bad_name_chars", with("name: lab", "name: \"lab one\""),
     "character ' ' is not allowed in names (use letters, digits, '-', '_', '.')", "spec.site.name",
     7},
    {"control_char_in_name", with("name: lab", "name: \"la\\tb\""),
     R"(character '\x09' is not allowed in names (use letters, digits, '-', '_', '.'))",
     "spec.site.name", 7},
    {"bad_placeholder", with("  zones:\n", "  naming:\n    rack: \"{zone}-{x}\"\n  zones:\n"),
     "unknown placeholder {x}; allowed: {zone}, {row}, {n}", "spec.naming.rack", 16},
    {"pattern_without_number",
     with("  zones:\n", "  naming:\n    rack: \"{zone}-rack\"\n  zones:\n"),
     "must contain {n so that the names are unique", "spec.naming.rack", 16},
    // Issue 39: names are at most 128 characters, written or made by a pattern; an 8,000-
    // character pattern reached PostgreSQL (54000) at apply.
    {"pattern_too_long",
     with("  zones:\n",
          "  naming:\n    rack: \"{zone}-" + std::string(8000, 'r') + "{n}\"\n  zones:\n"),
     "must be at most 128 characters, not 8010", "spec.naming.rack", 16},
    {"generated_name_too_long",
     with("  zones:\n    - rows: 2", "  naming:\n    rack: \"{zone}-" + std::string(30, 'r') +
                                         "{n}\"\n  zones:\n    - name: " + std::string(100, 'z') +
                                         "\n      rows: 2"),
     "makes the name \"" + std::string(40, 'z') + "...\" of 132 characters, above the limit of 128",
     "spec.naming.rack", 0},
    {"generated_names_collide",
     with("  zones:\n    - rows: 2",
          "  naming:\n    rack: \"r{n:03}\"\n  zones:\n    - count: 2\n      rows: 2"),
     R"(generated name "r001" is used twice (rack and rack); make the naming patterns distinct)",
     "spec.naming", 16},
    {"labels_not_strings", with("    name: lab", "    name: lab\n    labels: {a: [1]}"),
     "label values must be strings, got a list", "spec.site.labels.a", 8},
    {"atsw_without_ctsw_uplinks",
     std::string(kBase) + "    atsw:\n      model: sw\n      count: 2\n",
     "must be > 0: the atsw tier needs uplinks from every ctsw", "spec.fabric.ctsw.uplinks", 25},
    {"override_unknown_rack",
     std::string(kBase) + "  overrides:\n    racks:\n      - name: z1-r099\n        hosts: 1\n",
     R"(no rack named "z1-r099")", "spec.overrides.racks[0].name", 29},
    {"override_too_many_hosts",
     std::string(kBase) + "  overrides:\n    racks:\n      - name: z1-r001\n        hosts: 3\n",
     "rack z1-r001 may have at most 2 hosts (hostsPerRack of spec.zones[0])",
     "spec.overrides.racks[0].hosts", 30},
    {"override_unknown_switch",
     std::string(kBase) +
         "  overrides:\n    switches:\n      - name: z1-ctsw09\n        labels: {a: b}\n",
     R"(no switch named "z1-ctsw09")", "spec.overrides.switches[0].name", 29},
    {"override_labels_unknown",
     std::string(kBase) +
         "  overrides:\n    labels:\n      - name: nobody\n        labels: {a: b}\n",
     R"(no site, zone, row, rack, host, switch or storage node named "nobody")",
     "spec.overrides.labels[0].name", 29},
    {"cabling_unknown_port",
     std::string(kBase) +
         "  overrides:\n    cabling:\n      - swap: [z1-r001-rtsw/p17, z1-r009-rtsw/p18]\n",
     R"(no switch or NIC named "z1-r009-rtsw")", "spec.overrides.cabling[0].swap[1]", 29},
    {"cabling_port_out_of_range",
     std::string(kBase) + "  overrides:\n    cabling:\n      - move: {from: z1-r001-rtsw/p17, to: "
                          "z1-r001-rtsw/p65}\n",
     R"(port "z1-r001-rtsw/p65" does not exist (the device has 64 ports))",
     "spec.overrides.cabling[0].move.to", 29},
    {"cabling_move_onto_used_port",
     std::string(kBase) + "  overrides:\n    cabling:\n      - move: {from: z1-r001-rtsw/p17, to: "
                          "z1-r001-rtsw/p1}\n",
     R"(port "z1-r001-rtsw/p1" already has a cable)", "spec.overrides.cabling[0].move.to", 29},
    {"cabling_not_a_port",
     std::string(kBase) +
         "  overrides:\n    cabling:\n      - swap: [z1-r001-rtsw, z1-r001-rtsw/p18]\n",
     R"("z1-r001-rtsw" is not a port name (expected <device>/p<N>))",
     "spec.overrides.cabling[0].swap[0]", 29},
    {"model_override_too_small",
     with("        ports: 64", "        ports: 64\n      - name: tiny\n        ports: 8") +
         "  overrides:\n    switches:\n      - name: z1-r002-rtsw\n        model: tiny\n",
     R"(switch z1-r002-rtsw needs port 20 but its model "tiny" has 8 ports)",
     "spec.overrides.switches[0]", 31},
    {"oversubscription_not_dividing",
     with("      perZone: 2\n", "      perZone: 2\n      oversubscription: 3\n"),
     "zone z1 has 8 CTSW downlinks, not divisible by 3", "spec.fabric.ctsw.oversubscription", 27},
    {"uplinks_and_oversubscription",
     with("      perZone: 2\n", "      perZone: 2\n      uplinks: 2\n      oversubscription: 4\n"),
     "give either uplinks or oversubscription, not both", "spec.fabric.ctsw.oversubscription", 28},
    {"ib_su_not_dividing",
     with("  fabric:\n    type: roce\n    rtsw:\n      model: sw\n      uplinks: 4\n    ctsw:\n    "
          "  model: sw\n      perZone: 2\n",
          "  fabric:\n    type: infiniband\n    hostsPerSu: 3\n    leaf:\n      model: sw\n    "
          "spine:\n      model: sw\n      perPod: 2\n"),
     "pod z1 has 8 hosts, not a multiple of hostsPerSu (3)", "spec.zones[0]", 16},
    {"ib_leaf_uplinks",
     with("  fabric:\n    type: roce\n    rtsw:\n      model: sw\n      uplinks: 4\n    ctsw:\n    "
          "  model: sw\n      perZone: 2\n",
          "  fabric:\n    type: infiniband\n    hostsPerSu: 4\n    leaf:\n      model: sw\n      "
          "uplinks: 3\n    spine:\n      model: sw\n      perPod: 2\n"),
     "must be a multiple of spine.perPod (2)", "spec.fabric.leaf.uplinks", 24},
    {"ib_typo",
     with("  fabric:\n    type: roce\n    rtsw:\n      model: sw\n      uplinks: 4\n    ctsw:\n    "
          "  model: sw\n      perZone: 2\n",
          "  fabric:\n    type: infiniband\n    hostPerSu: 4\n"),
     R"(unknown key; did you mean "hostsPerSu"?)", "spec.fabric.hostPerSu", 21},
    {"fsw_uplinks_without_fcsw",
     std::string(kBase) + "  frontend:\n    fsw: {model: sw, uplinks: 2}\n",
     "fsw uplinks go to the fcsws, and there are none (add frontend.fcsw)",
     "spec.frontend.fsw.uplinks", 28},
    {"storage_unknown_zone",
     std::string(kBase) +
         "  storage: {zone: z9, racks: 1, nodesPerRack: 1, model: x, ssw: {model: sw}}\n",
     R"(unknown zone "z9")", "spec.storage.zone", 27},
    {"yaml_syntax", with("      racks: 4", "      racks: [4"),
     "YAML syntax error: end of sequence flow not found", "", 18},
    {"yaml_bad_indent", with("    name: lab", "    name: lab\n  bad indent: [}"),
     "YAML syntax error: illegal flow end", "", 8},
    {"not_a_map", "- just\n- a list\n", "must be a map, got a list", "", 1},
    {"empty", "", "empty document", "", 0},
    {"two_documents", std::string(kBase) + "---\napiVersion: loom/v1\n",
     "expected one document, got 2", "", 28},
};

INSTANTIATE_TEST_SUITE_P(Table, SpecErrors, ::testing::ValuesIn(kBadDocs),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(SpecLimitsTest, OversizeDocumentIsTooLarge) {
    SpecLimits limits;
    limits.maxBytes = 100;
    auto r = parseClusterSpec(kBase, limits);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code, Errc::TooLarge);
    EXPECT_EQ(r.error().message, "document is " + std::to_string(std::string(kBase).size()) +
                                     " bytes, above the limit of 100");
}

TEST(SpecLimitsTest, BillionLaughsIsRefused) {
    // Each level doubles... by ten: 10^9 nodes if aliases were expanded.
    std::string doc = "a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n";
    for (int i = 1; i <= 9; ++i) {
        std::string p = "*a" + std::to_string(i - 1);
        doc += "a" + std::to_string(i) + ": &a" + std::to_string(i) + " [" + p;
        for (int k = 0; k < 9; ++k) doc += ", " + p;
        doc += "]\n";
    }
    auto r = parseClusterSpec(doc);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code, Errc::TooLarge);
    EXPECT_EQ(r.error().message,
              "document has more than 200000 nodes (aliases count once per use)");
}

TEST(SpecLimitsTest, DeepNestingIsRefused) {
    std::string doc = "apiVersion: " + std::string(100, '[') + std::string(100, ']') + "\n";
    auto r = parseClusterSpec(doc);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code, Errc::InvalidArgument);
    EXPECT_EQ(r.error().message, "nested deeper than 24 levels");
    EXPECT_EQ(r.error().line, 1);

    // Far deeper than yaml-cpp's own recursion guard: still an error, not a stack overflow.
    std::string deeper = "a: " + std::string(100000, '[') + "\n";
    auto r2 = parseClusterSpec(deeper);
    ASSERT_FALSE(r2);
    EXPECT_EQ(r2.error().code, Errc::InvalidArgument);
}

TEST(SpecLimitsTest, ExpansionSizeIsBounded) {
    // 1024 zones of 8192 racks of 64 hosts: refused before anything is allocated.
    std::string doc = kBase;
    doc.replace(doc.find("    - rows: 2\n      racks: 4\n      hostsPerRack: 2"),
                std::string("    - rows: 2\n      racks: 4\n      hostsPerRack: 2").size(),
                "    - count: 1024\n      rows: 256\n      racks: 8192\n      hostsPerRack: 64");
    doc.replace(doc.find("ports: 64"), 9, "ports: 4096");
    auto r = parseClusterSpec(doc);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().path, "spec.zones");
    EXPECT_NE(r.error().message.find("above the limit of 2000000"), std::string::npos)
        << r.error().message;
}

TEST(SpecLimitsTest, GarbageNeverThrows) {
    // Random bytes and truncations of a valid document: always a value, never an exception.
    std::string base = kBase;
    std::uint32_t seed = 12345;
    auto rnd = [&] { return seed = seed * 1664525u + 1013904223u; };
    for (int i = 0; i < 2000; ++i) {
        std::string doc = base.substr(0, rnd() % base.size());
        for (int k = 0; k < 3; ++k)
            if (!doc.empty()) doc[rnd() % doc.size()] = char(rnd() % 256);
        EXPECT_NO_THROW({
            auto r = loadClusterSpec(doc);
            (void)r;
        });
    }
}

TEST(SpecJson, JsonDocumentsAreAccepted) {
    const char* json = R"({"apiVersion": "loom/v1", "kind": "Cluster", "metadata": {"name": "j"},
      "spec": {"site": {"name": "lab"},
               "models": {"hosts": [{"name": "gt"}], "switches": [{"name": "sw", "ports": 64}]},
               "zones": [{"racks": 2}],
               "fabric": {"type": "roce", "rtsw": {"model": "sw", "uplinks": 2},
                          "ctsw": {"model": "sw", "perZone": 2}}}})";
    auto inv = loadClusterSpec(json);
    ASSERT_TRUE(inv) << inv.error().toString();
    EXPECT_EQ(inv->hosts.size(), 4u);
    EXPECT_EQ(inv->gpus.size(), 32u);

    std::string bad = json;
    bad.replace(bad.find("\"racks\": 2"), 10, "\"racks\": \"2\"");
    auto r = loadClusterSpec(bad);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().toString(),
              "spec.zones[0].racks: must be an integer, got string \"2\" (line 4)");
}

}  // namespace
}  // namespace loom::inventory

namespace loom::inventory {
namespace {

TEST(SpecFile, MissingFileIsAnError) {
    auto r = loadClusterSpecFile("/nonexistent/cluster.yaml");
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code, Errc::InvalidArgument);
    EXPECT_EQ(r.error().message, "cannot open /nonexistent/cluster.yaml: no such file");
}

TEST(SpecFile, DirectoryIsNamedAsOne) {
    auto r = loadClusterSpecFile(std::string(LOOM_SOURCE_DIR) + "/configs/clusters");
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code, Errc::InvalidArgument);
    EXPECT_NE(r.error().message.find("is a directory"), std::string::npos) << r.error().message;
}

TEST(SpecFile, OversizeFileIsTooLarge) {
    SpecLimits limits;
    limits.maxBytes = 1000;
    auto r = loadClusterSpecFile(
        std::string(LOOM_SOURCE_DIR) + "/configs/clusters/meta-24k-roce.yaml", limits);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code, Errc::TooLarge);
}

TEST(SpecFile, ErrorsWithoutPathNameTheFile) {
    std::string path = ::testing::TempDir() + "/loom-spec-empty.yaml";
    { std::ofstream(path) << "# nothing here\n"; }
    auto r = loadClusterSpecFile(path);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().message, path + ": empty document");
}

}  // namespace
}  // namespace loom::inventory

namespace loom::inventory {
namespace {

constexpr const char* kMerge = R"(apiVersion: loom/v1
kind: Cluster
metadata: {name: m}
spec:
  site: {name: lab}
  models:
    hosts: [{name: gt}]
    switches: [{name: sw, ports: 64}]
  zones:
    - &zone {rows: 2, racks: 4, hostsPerRack: 2}
    - {<<: *zone, racks: 2}
    - <<: [*zone]
      name: zx
  fabric: {type: roce, rtsw: {model: sw, uplinks: 2}, ctsw: {model: sw, perZone: 2}}
)";

TEST(SpecMerge, MergeKeysFillDefaults) {
    auto inv = loadClusterSpec(kMerge);
    ASSERT_TRUE(inv) << inv.error().toString();
    ASSERT_EQ(inv->zones.size(), 3u);
    EXPECT_EQ(inv->zones[2].name, "zx");
    // 4 + 2 (own key wins over the merged one) + 4 racks, 2 hosts each.
    EXPECT_EQ(inv->hosts.size(), 20u);
}

TEST(SpecMerge, MergedKeysAreChecked) {
    std::string doc = kMerge;
    doc.replace(doc.find("hostsPerRack: 2}"), 16, "hostsPerRak: 2}");
    auto r = loadClusterSpec(doc);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().toString(),
              "spec.zones[0].hostsPerRak: unknown key; did you mean \"hostsPerRack\"? (line 10)");

    std::string bad = kMerge;
    bad.replace(bad.find("<<: *zone"), 9, "<<: 3");
    r = loadClusterSpec(bad);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().toString(),
              "spec.zones[1].<<: merge key needs a map or a list of maps, got \"3\" (line 11)");
}

}  // namespace
}  // namespace loom::inventory
