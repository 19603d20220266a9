"""At a glance: memories per day and per priority, LLM failures and skipped turns per day, as small SVG bar
charts drawn on the server (no chart library, nothing to build). Each bar carries its number, and each chart
its total."""

from __future__ import annotations

from markupsafe import Markup, escape

from memory_pipeline.stores.activity import Series

# Below this width a bar's number would overlap its neighbours': then only the tallest bar and the last one say it
# (every bar still has it in its tooltip).
NUMBER_MIN_STEP = 18
LABEL_MIN_STEP = 90


def bar_chart(series: Series, width: int = 640, height: int = 140) -> Markup:
    """An SVG bar chart; every label and value is escaped text (no markup from the data reaches the page)."""
    if not series.points:
        return Markup('<p class="empty">{}: nothing yet.</p>').format(series.title)
    most = max(count for _, count in series.points)
    top = most or 1  # the scale (all zero: flat bars, no division by zero)
    total = sum(count for _, count in series.points)
    step = width / len(series.points)
    floor, room = height - 20, height - 36  # the labels' line below, a number's line above the tallest bar
    tallest = max(range(len(series.points)), key=lambda i: series.points[i][1])
    shown = set(range(len(series.points))) if step >= NUMBER_MIN_STEP else {tallest, len(series.points) - 1}
    bars = []
    for i, (label, count) in enumerate(series.points):
        bar = room * count / top
        x, y = i * step + 1, floor - bar
        bars.append(
            Markup('<rect x="{:.1f}" y="{:.1f}" width="{:.1f}" height="{:.1f}"><title>{}: {}</title></rect>').format(
                x, y, max(step - 2, 1), bar, label, count
            )
        )
        if i in shown and count:  # an empty day says nothing (its tooltip says 0)
            bars.append(
                Markup('<text class="count" x="{:.1f}" y="{:.1f}" text-anchor="middle">{}</text>').format(
                    x + max(step - 2, 1) / 2, y - 3, count
                )
            )
    if step >= LABEL_MIN_STEP:  # room for every bar's label under it (the priorities)
        labels = Markup("").join(
            Markup('<text x="{:.1f}" y="{}" text-anchor="middle">{}</text>').format(
                i * step + step / 2, height - 4, label
            )
            for i, (label, _) in enumerate(series.points)
        )
    else:  # a label per day would overlap: the first day and the last
        labels = Markup(
            '<text x="0" y="{ty}">{first}</text><text x="{w}" y="{ty}" text-anchor="end">{last}</text>'
        ).format(ty=height - 4, w=width, first=escape(series.points[0][0]), last=escape(series.points[-1][0]))
    return Markup(
        '<figure><figcaption>{title} (total {total}, max {top})</figcaption><svg viewBox="0 0 {w} {h}" '
        'width="{w}" height="{h}" role="img" aria-label="{title}">{bars}{labels}</svg></figure>'
    ).format(
        title=series.title,
        total=total,
        top=most,
        w=width,
        h=height,
        bars=Markup("").join(bars),
        labels=labels,
    )
