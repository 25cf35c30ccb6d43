"""A benchmark figure and its one-line form (`name: value unit [spread] (note)`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


def number(value: float) -> str:
    """A measured value as every figure prints it: three decimals (a ratio of 1.0333 is 1.033, which misses
    a bound of 1.03; two decimals made it 1.03, "met")."""
    return f"{value:.3f}"


@dataclass(frozen=True)
class Figure:
    """One measured figure: a name, a value with its unit, its spread and a short note (limit, ratio, sizes).

    rounds: the value of each round it was measured in (the figure is their median, or the ratio of the
    medians); empty when it was measured once. The printed line shows their min and max, and the targets table
    calls a figure whose range crosses its bound "not resolved".
    """

    name: str
    value: float | int | str
    unit: str = ""
    note: str = ""
    rounds: tuple[float, ...] = ()

    @property
    def spread(self) -> tuple[float, float] | None:
        """(min, max) of the rounds, or None when it was measured once."""
        return (min(self.rounds), max(self.rounds)) if len(self.rounds) > 1 else None

    def spread_text(self) -> str:
        """`min 0.890 / max 1.230 of 6 rounds`, or `one run`."""
        if self.spread is None:
            return "one run"
        low, high = self.spread
        return f"min {number(low)} / max {number(high)} of {len(self.rounds)} rounds"

    def line(self) -> str:
        """The printed line, e.g. `tus_vs_raw_throughput: 0.950 [min 0.890 / max 1.230 of 6 rounds] (...)`:
        floats with three decimals, the spread in brackets (`one run` when measured once)."""
        value = number(self.value) if isinstance(self.value, float) else str(self.value)
        text = f"{self.name}: {value}"
        if self.unit:
            text += f" {self.unit}"
        if isinstance(self.value, float):
            text += f" [{self.spread_text()}]"
        if self.note:
            text += f" ({self.note})"
        return text


def with_rounds(name: str, rounds: Sequence[float], unit: str = "", note: str = "") -> Figure:
    """A figure that is the median of its rounds' values, with them as its spread."""
    ordered = sorted(rounds)
    middle = len(ordered) // 2
    median = ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2
    return Figure(name, float(median), unit, note, tuple(float(r) for r in rounds))
