// FailureCounter: the always-visible count of open failures by kind ("3 GPUs · 1 rack ..."),
// one button per kind. Clicking a kind shows only that kind on the maps and in the event list
// (FailureIndex::setFilter); clicking it again, or "all", shows everything.
#pragma once

#include "loom/console/failures.hpp"

#include <QPointer>
#include <QToolButton>
#include <QWidget>

#include <array>

namespace loom::console {

class FailureCounter : public QWidget {
    Q_OBJECT
public:
    explicit FailureCounter(FailureIndex* failures, QWidget* parent = nullptr);

    QToolButton* button(FailureKind k) const { return buttons_[static_cast<size_t>(k)]; }
    QToolButton* allButton() const { return all_; }
    QString text() const;  // "open failures: 3 GPUs, 0 hosts, ..." (tests, accessibility)

private:
    void refresh();

    QPointer<FailureIndex> failures_;
    std::array<QToolButton*, kFailureKindCount> buttons_{};
    QToolButton* all_;
};

}  // namespace loom::console
