"""The judge server's work, free of any web framework: load the backend, judge batches, score reward requests."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from enum import Enum

from medical_team.common.vocab import Label
from medical_team.data.seeds import no_error_seed
from medical_team.game.judging import Judge, JudgeRequest, JudgeVerdict
from medical_team.game.rewards import RewardConfig
from medical_team.game.settle import AssessorScore
from medical_team.judge.openrlhf_rewards import score_queries

log = logging.getLogger(__name__)

# The game readiness asks the backend to settle: a note rewritten as itself (a clean note, kept clean).
_PROBE_NOTE = "A 54-year-old man presents with a cough for two weeks. Chest X-ray is clear. He is given rest."
READINESS_PROBE = JudgeRequest(
    seed=no_error_seed("readiness-probe", "readiness probe", _PROBE_NOTE),
    intended_label=Label.NO_ERROR,
    rewrite=_PROBE_NOTE,
)


class ScorerState(str, Enum):
    """Where the backend is in its life."""

    LOADING = "loading"
    READY = "ready"
    FAILED = "failed"


class ScorerNotReady(RuntimeError):
    """The backend is still loading or failed to load."""


class JudgeScorer:
    """Owns one judge backend (built by `factory`, possibly slowly) and serialises calls into it."""

    def __init__(self, factory: Callable[[], Judge], *, rewards: RewardConfig | None = None) -> None:
        self._factory = factory
        self._judge: Judge | None = None
        self.rewards = rewards or RewardConfig()
        self.state = ScorerState.LOADING
        self.failure = ""
        self._lock = threading.Lock()  # backends such as a local model are not re-entrant

    def load(self) -> None:
        """Build the backend; on failure remember why (reported by readiness) instead of raising."""
        try:
            self._judge = self._factory()
        except Exception as error:  # noqa: BLE001 - a bad model must show up in /ready, not kill the server
            self.failure = f"{type(error).__name__}: {error}"
            self.state = ScorerState.FAILED
            log.error("judge backend failed to load: %s", self.failure)
            return
        self.state = ScorerState.READY
        log.info("judge backend ready: %s", type(self._judge).__name__)

    def load_in_background(self) -> threading.Thread:
        """Start `load` on a daemon thread so the server answers /health while a model loads."""
        thread = threading.Thread(target=self.load, name="judge-backend-load", daemon=True)
        thread.start()
        return thread

    @property
    def judge_backend(self) -> Judge:
        """The loaded backend; raises `ScorerNotReady` while loading or after a failed load."""
        if self._judge is None:
            detail = f": {self.failure}" if self.failure else ""
            raise ScorerNotReady(f"judge backend is {self.state.value}{detail}")
        return self._judge

    def judge(self, requests: Sequence[JudgeRequest]) -> list[JudgeVerdict]:
        """Verdicts for a batch of games, in order (blocking; call it off the event loop)."""
        backend = self.judge_backend
        with self._lock:
            return backend.judge(requests)

    def score_assessor(
        self, queries: Sequence[str], prompts: Sequence[str] | None, labels: Sequence[str]
    ) -> list[AssessorScore]:
        """Assessor scores of OpenRLHF-style queries; raises `RewardInputError` naming the first bad item."""
        return score_queries(queries, prompts, labels, self.rewards)

    def probe(self) -> tuple[JudgeVerdict, float]:
        """The backend's verdict on `READINESS_PROBE` and the seconds it took (blocking; off the event loop)."""
        started = time.monotonic()
        (verdict,) = self.judge([READINESS_PROBE])
        return verdict, time.monotonic() - started
