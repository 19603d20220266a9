"""At a glance: memories per day and per priority, LLM failures and skipped turns per day, as small SVG bar
charts drawn on the server (no chart library, nothing to build)."""

from __future__ import annotations

from markupsafe import Markup, escape

from memory_pipeline.stores.activity import Series


def bar_chart(series: Series, width: int = 640, height: int = 120) -> Markup:
    """An SVG bar chart; every label and value is escaped text (no markup from the data reaches the page)."""
    if not series.points:
        return Markup('<p class="empty">{}: nothing yet.</p>').format(series.title)
    top = max(count for _, count in series.points) or 1
    step = width / len(series.points)
    bars = []
    for i, (label, count) in enumerate(series.points):
        bar = (height - 20) * count / top
        x, y = i * step + 1, height - 20 - bar
        bars.append(
            Markup('<rect x="{:.1f}" y="{:.1f}" width="{:.1f}" height="{:.1f}"><title>{}: {}</title></rect>').format(
                x, y, max(step - 2, 1), bar, label, count
            )
        )
    first, last = escape(series.points[0][0]), escape(series.points[-1][0])
    return Markup(
        '<figure><figcaption>{title} (max {top})</figcaption><svg viewBox="0 0 {w} {h}" width="{w}" height="{h}" '
        'role="img" aria-label="{title}">{bars}<text x="0" y="{ty}">{first}</text>'
        '<text x="{w}" y="{ty}" text-anchor="end">{last}</text></svg></figure>'
    ).format(
        title=series.title,
        top=top,
        w=width,
        h=height,
        bars=Markup("").join(bars),
        ty=height - 4,
        first=first,
        last=last,
    )
