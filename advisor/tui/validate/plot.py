"""The plot of A against B per round, one per metric, drawn live as a run samples and again from
the report once it is judged."""

from __future__ import annotations

from textual_plotext import PlotextPlot

#: How each side is named in a plot's legend.
SIDE_NAMES = {"A": "A defaults", "B": "B proposal"}
#: At most this many round numbers under a plot (more would run together).
MAX_X_TICKS = 8


def round_ticks(rounds: int) -> list[int]:
    """Whole round numbers for a plot's x axis: every round, or every k-th (and the last) when
    there are more than MAX_X_TICKS."""
    if rounds <= 0:
        return []
    step = -(-rounds // MAX_X_TICKS)
    ticks = list(range(1, rounds + 1, step))
    if ticks[-1] != rounds:
        if rounds - ticks[-1] < step and len(ticks) > 1:
            ticks.pop()  # too close to the last to print both
        ticks.append(rounds)
    return ticks


class MetricPlot(PlotextPlot):
    """A against B per round for one metric; keeps the values it was given so that it can be
    redrawn as rounds arrive. In colour: a braille line per side. Without colour (NO_COLOR) or
    on the Linux console (no braille in its font): each round a point drawn as the letter of
    its side, A or B, so the two series differ by shape and every glyph is plain ASCII."""

    def __init__(self, name: str, title: str, unit: str, *, plain: bool = False) -> None:
        super().__init__()
        self.metric, self.heading = name, f"{title} ({unit})" if unit else title
        self.values: dict[str, list[float]] = {"A": [], "B": []}
        self.plain = plain

    def add(self, side: str, value: float) -> None:
        self.values.setdefault(side, []).append(value)
        self.redraw()

    def redraw(self) -> None:
        plt = self.plt
        plt.clear_data()
        rounds = 0
        for side in ("A", "B"):
            points = self.values.get(side, [])
            if not points:
                continue
            xs = list(range(1, len(points) + 1))
            rounds = max(rounds, len(points))
            if self.plain:
                plt.scatter(xs, points, label=SIDE_NAMES[side], marker=side)
            else:
                plt.plot(xs, points, label=SIDE_NAMES[side], marker="braille")
        ticks = round_ticks(rounds)
        if ticks:
            plt.xticks([float(t) for t in ticks], [str(t) for t in ticks])
            if rounds == 1:
                plt.xlim(0.5, 1.5)
        plt.title(self.heading)
        plt.xlabel("round")
        self.refresh()
