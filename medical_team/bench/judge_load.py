"""The judge server under load: `medplay judge serve` as its own process, games that carry their number, and the
ledger that checks every verdict came back once, to its own game.

Used by `medplay bench judge-server` (judge_server.py) and tests/judge_server/test_load.py.
Game N's seed names its error sentence `[game N] ...` and its rewrite ends with `[game N]`: the rules judge echoes the
seed's error sentence in its verdict (a harmful seed whose error the rewrite keeps, or a copy of the seed), and a
scripted model judge can echo the rewrite's tag, so a verdict names the game it was made for.
"""

from __future__ import annotations

import dataclasses
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from functools import cache
from pathlib import Path
from typing import IO, Self

import httpx

from medical_team.bench.commands import MEDPLAY
from medical_team.common.vocab import Category, Label
from medical_team.data.records import GameSeed
from medical_team.game.judging import JudgeRequest, JudgeVerdict

_TAG = re.compile(r"\[game (\d+)\]")
_LISTENING = re.compile(r"Uvicorn running on (http://[^\s]+)")


def tag(number: int) -> str:
    """The mark game `number` carries in its seed's error sentence and its rewrite."""
    return f"[game {number}]"


def tagged_game(text: str) -> int | None:
    """The game a text names by its first tag (None when it names none)."""
    match = _TAG.search(text)
    return int(match.group(1)) if match else None


@cache
def harmful_seeds() -> tuple[GameSeed, ...]:
    """The bundled MEDEC notes' harmful adversarial seeds (each keeps a known error sentence)."""
    from medical_team.judge.gold import medec_seeds

    return tuple(seed for seed in medec_seeds("all") if seed.category is Category.ADVERSARIAL_HARMFUL)


def game(number: int, *, copy: bool = False) -> JudgeRequest:
    """Game `number`: a real harmful seed renamed after it; its rewrite keeps the error and ends with its tag, or
    (`copy`) repeats the seed, which a rule settles. Either way the verdict's error sentence carries the tag."""
    seeds = harmful_seeds()
    base = seeds[number % len(seeds)]
    seed = dataclasses.replace(
        base,
        note_id=f"load-{number}",
        pair_id=f"load-{number}",
        error_sentence=f"{tag(number)} {base.error_sentence}",
    )
    rewrite = seed.text if copy else f"{seed.text} {tag(number)}"
    return JudgeRequest(seed=seed, intended_label=Label.ERROR, rewrite=rewrite)


class Ledger:
    """Which games got which verdicts: each game's verdict must come back exactly once, to that game's call."""

    def __init__(self, games: int) -> None:
        self.games = games
        self.received = [0] * games  # verdicts that named game i
        self.misdirected = 0  # verdicts naming another game than the one whose place they took
        self.ties: list[str] = []  # reasons of verdicts that name no game (an outage, a refused batch)
        self._lock = threading.Lock()

    def record(self, numbers: Sequence[int], verdicts: Sequence[JudgeVerdict]) -> None:
        """The verdicts a call returned for games `numbers`, in order."""
        with self._lock:
            if len(verdicts) != len(numbers):
                self.ties.append(f"{len(verdicts)} verdicts for {len(numbers)} games")
            for number, verdict in zip(numbers, verdicts):
                named = _named_game(verdict)
                if named is None:
                    self.ties.append(verdict.reason)
                    continue
                self.received[named] += 1
                self.misdirected += named != number

    def summary(self) -> dict[str, int]:
        """Counts: games answered once, lost (never answered), duplicated (answered twice or more), misdirected."""
        with self._lock:
            return {
                "games": self.games,
                "answered_once": sum(count == 1 for count in self.received),
                "lost": sum(count == 0 for count in self.received),
                "duplicated": sum(count > 1 for count in self.received),
                "misdirected": self.misdirected,
                "ties": len(self.ties),
            }

    def clean(self) -> bool:
        """True when every game's verdict came back exactly once, to its own call."""
        summary = self.summary()
        return summary["answered_once"] == self.games and summary["misdirected"] == summary["ties"] == 0


def _named_game(verdict: JudgeVerdict) -> int | None:
    if verdict.tie or verdict.error_sentence is None:
        return None
    match = _TAG.match(verdict.error_sentence)
    return int(match.group(1)) if match else None


class ServedJudge:
    """`medplay judge serve ARGS --port 0` in its own process, its output in `log_path`; the URL from its log."""

    def __init__(
        self, args: Sequence[str], log_path: Path, *, ready_s: float = 600.0, env: dict[str, str] | None = None
    ) -> None:
        self.command = [MEDPLAY, "judge", "serve", "--port", "0", *args]
        # started through the exec wrapper that asks Linux to end it with this process (a killed test or benchmark)
        self._exec = [sys.executable, "-m", "medical_team.judge_server.served_judge_exec"]
        self.log_path = log_path
        self.ready_s = ready_s  # a guard: loading a model on a busy machine takes a while
        self.env = {**os.environ, **(env or {})}
        self.url = ""
        self.returncode: int | None = None
        self._log: IO[bytes] | None = None
        self.process: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> Self:
        self._log = self.log_path.open("wb")
        self.process = subprocess.Popen(
            [*self._exec, *self.command], stdout=self._log, stderr=subprocess.STDOUT, env=self.env
        )
        deadline = time.monotonic() + self.ready_s
        while not (listening := _LISTENING.search(self.log_path.read_text(errors="replace"))):
            self._check_alive(deadline, "to listen")
            time.sleep(0.1)
        self.url = listening.group(1)
        with httpx.Client(timeout=10) as client:
            while not _answers(client, f"{self.url}/ready"):
                self._check_alive(deadline, "to be ready")
                time.sleep(0.1)
        return self

    @property
    def pid(self) -> int:
        """The server's process id."""
        assert self.process is not None
        return self.process.pid

    def _check_alive(self, deadline: float, what: str) -> None:
        assert self.process is not None
        tail = self.log_path.read_text(errors="replace")[-2000:]
        if self.process.poll() is not None:
            raise RuntimeError(f"`{' '.join(self.command)}` exited {self.process.returncode}: {tail}")
        if time.monotonic() > deadline:
            raise RuntimeError(f"`{' '.join(self.command)}` took over {self.ready_s} s {what}: {tail}")

    def stop(self) -> int:
        """SIGTERM (the server finishes the requests in flight and exits 0), SIGKILL after 60 s; its exit status."""
        assert self.process is not None
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if self._log is not None:
            self._log.close()
        self.returncode = self.process.returncode
        return self.returncode

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def answered(self, status: int) -> int:
        """How many POST /v1/judge the server's access log shows answered with `status`."""
        return self.log_path.read_text(errors="replace").count(f'"POST /v1/judge HTTP/1.1" {status}')


def _answers(client: httpx.Client, url: str) -> bool:
    try:
        return client.get(url).status_code == 200
    except httpx.TransportError:
        return False
