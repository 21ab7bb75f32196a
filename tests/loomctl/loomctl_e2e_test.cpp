// End to end: loomctl against a real `loomd serve` on its embedded PostgreSQL (port 0).
#include <gtest/gtest.h>

int placeholderForE2e = 0;
