"""Helpers of the benchmark scripts: the `medplay` command line, the machine and its load while a result was
measured, and writing the result."""

from __future__ import annotations

import json
import os
import platform
import sys
import threading
from pathlib import Path
from typing import Any, Self

MEDPLAY = "import sys; from medical_team.cli import main; sys.exit(main(sys.argv[1:]))"


def machine() -> dict[str, Any]:
    """Python version, CPU count and platform of this machine, for a result's `machine` field."""
    return {"python": platform.python_version(), "cpus": os.cpu_count(), "platform": platform.platform()}


def write_result(output: Path, result: dict[str, Any]) -> int:
    """Write `result` as JSON to `output`, print it, and return the exit status: 0 when it meets its target."""
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(result, indent=2))
    return 0 if result["meets_target"] else 1


def medplay(*args: str) -> list[str]:
    """The command line of `medplay ARGS` in this interpreter (the checkout's code on PYTHONPATH wins)."""
    return [sys.executable, "-c", MEDPLAY, *args]


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


def generated_tokens(model: Path, responses: Path) -> int:
    """Tokens in the `response` fields of a JSONL file (eval's responses, predict's predictions), by the model's tokenizer."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(model)
    lines = [json.loads(line)["response"] for line in responses.read_text(encoding="utf-8").splitlines()]
    return sum(len(tokenizer(text, add_special_tokens=False).input_ids) for text in lines)
