"""A benchmark figure and its one-line form (`name: value unit (note)`)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Figure:
    """One measured figure: a name, a value with its unit, and a short note (limit, ratio, sizes)."""

    name: str
    value: float | int | str
    unit: str = ""
    note: str = ""

    def line(self) -> str:
        """The printed line, e.g. `api_calls_per_video_tus: 1.030 (limit 1.0)`. A ratio (no unit, under 10)
        shows three decimals: the targets table compares the printed value, and 124.0 s / 120 s is 1.033,
        which two decimals would round to a bound of 1.03."""
        if isinstance(self.value, float):
            size = abs(self.value)
            value = (
                f"{self.value:.3f}"
                if size < 10 and not self.unit
                else f"{self.value:.2f}"
                if size < 10
                else f"{self.value:.1f}"
                if size < 100
                else f"{self.value:.0f}"
            )
        else:
            value = str(self.value)
        text = f"{self.name}: {value}"
        if self.unit:
            text += f" {self.unit}"
        if self.note:
            text += f" ({self.note})"
        return text
