#include "loom/console/failure_counter.hpp"

#include "loom/console/palette.hpp"

#include <QHBoxLayout>
#include <QLabel>

namespace loom::console {

FailureCounter::FailureCounter(FailureIndex* failures, QWidget* parent)
    : QWidget(parent), failures_(failures)
{
    auto* lay = new QHBoxLayout(this);
    lay->setContentsMargins(4, 0, 4, 0);
    lay->setSpacing(3);
    auto* title = new QLabel(tr("Open failures:"), this);
    QFont bold = title->font();
    bold.setBold(true);
    title->setFont(bold);
    lay->addWidget(title);
    all_ = new QToolButton(this);
    all_->setCheckable(true);
    all_->setAutoRaise(true);
    all_->setToolTip(tr("Show every kind of failure on the maps and in the event list"));
    lay->addWidget(all_);
    for (int k = 0; k < kFailureKindCount; ++k) {
        auto* b = new QToolButton(this);
        b->setCheckable(true);
        b->setAutoRaise(true);
        b->setToolTip(tr("Show only %1 failures on the maps and in the event list (click again for all)")
                          .arg(failureKindName(static_cast<FailureKind>(k))));
        buttons_[static_cast<size_t>(k)] = b;
        lay->addWidget(b);
        connect(b, &QToolButton::clicked, this, [this, k](bool checked) {
            if (failures_)
                failures_->setFilter(checked ? failureBit(static_cast<FailureKind>(k)) : kAllFailureKinds);
        });
    }
    connect(all_, &QToolButton::clicked, this, [this] {
        if (failures_)
            failures_->setFilter(kAllFailureKinds);
        refresh();
    });
    connect(failures, &FailureIndex::changed, this, &FailureCounter::refresh);
    connect(failures, &FailureIndex::filterChanged, this, &FailureCounter::refresh);
    refresh();
}

void FailureCounter::refresh()
{
    if (!failures_)
        return;
    const unsigned filter = failures_->filter();
    all_->setText(tr("all %1").arg(failures_->total()));
    all_->setChecked(filter == kAllFailureKinds);
    for (int k = 0; k < kFailureKindCount; ++k) {
        const auto kind = static_cast<FailureKind>(k);
        const int n = failures_->count(kind);
        auto* b = buttons_[static_cast<size_t>(k)];
        b->setText(QStringLiteral("%1 %2").arg(n).arg(failureKindName(kind, n != 1)));
        b->setChecked(filter != kAllFailureKinds && (filter & failureBit(kind)));
        b->setStyleSheet(n > 0 ? QStringLiteral("QToolButton{color:white;background:%1;border-radius:3px;padding:1px 5px;font-weight:bold}"
                                                "QToolButton:checked{border:2px solid white}")
                                     .arg(QColor(failedColor()).name())
                               : QStringLiteral("QToolButton{padding:1px 5px;color:#8a8a96}"
                                                "QToolButton:checked{border:2px solid #8a8a96}"));
    }
}

QString FailureCounter::text() const
{
    QStringList parts;
    for (int k = 0; k < kFailureKindCount; ++k)
        parts << buttons_[static_cast<size_t>(k)]->text();
    return tr("open failures: %1").arg(parts.join(QStringLiteral(", ")));
}

}  // namespace loom::console
