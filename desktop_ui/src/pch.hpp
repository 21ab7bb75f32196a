// Precompiled header for loom-console: the Qt headers every translation unit pulls in.
#pragma once

#include <QtCore>
#include <QtGui>
#include <QtNetwork>
#include <QtWidgets>

#include <cstdint>
#include <expected>
#include <functional>
#include <vector>
