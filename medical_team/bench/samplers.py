"""Samplers a benchmark runs on a thread while it measures: the machine's load, and the base class of others."""

from __future__ import annotations

import os
import threading
from typing import Self


class PeriodicSampler:
    """Calls `sample` now and every `every_s` seconds on a thread while the `with` block lasts, and once at its end."""

    def __init__(self, every_s: float) -> None:
        self.every_s = every_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=type(self).__name__, daemon=True)

    def sample(self) -> None:
        """Take one sample now (each sampler's own)."""
        raise NotImplementedError

    def _run(self) -> None:
        while True:
            self.sample()
            if self._stop.wait(self.every_s):
                return

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.sample()


class LoadSampler(PeriodicSampler):
    """The machine's 1-minute load average, sampled every few seconds while a run lasts."""

    def __init__(self, every_s: float = 5.0) -> None:
        super().__init__(every_s)
        self.samples: list[float] = []

    def sample(self) -> None:
        """The 1-minute load average now."""
        self.samples.append(os.getloadavg()[0])

    def summary(self) -> dict[str, float]:
        """Min, mean and max of the samples."""
        return {
            "min": round(min(self.samples), 2),
            "mean": round(sum(self.samples) / len(self.samples), 2),
            "max": round(max(self.samples), 2),
        }
