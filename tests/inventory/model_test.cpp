#include "loom/inventory/error.hpp"
#include "loom/inventory/model.hpp"

#include <gtest/gtest.h>

namespace loom::inventory {
namespace {

TEST(Model, KindNamesRoundTrip) {
    for (Kind k : kAllKinds) {
        EXPECT_EQ(parseKind(kindName(k)), k);
        EXPECT_EQ(parseKind(kindPlural(k)), k);
    }
    EXPECT_FALSE(parseKind("gpus2").has_value());
}

TEST(Model, ErrorFormatsPathAndLine) {
    Error e = Error::invalid("must be > 0", "spec.zones[2].racks", 14);
    EXPECT_EQ(e.toString(), "spec.zones[2].racks: must be > 0 (line 14)");
    EXPECT_EQ(httpStatus(e.code), 400);
    EXPECT_EQ(Error::conflict("x").toString(), "x");
}

TEST(Model, SwitchTiers) {
    EXPECT_EQ(switchTier(SwitchRole::Rtsw), 1);
    EXPECT_EQ(switchTier(SwitchRole::Ctsw), 2);
    EXPECT_EQ(switchTier(SwitchRole::Core), 3);
    EXPECT_EQ(parseSwitchRole("atsw"), SwitchRole::Atsw);
}

}  // namespace
}  // namespace loom::inventory
