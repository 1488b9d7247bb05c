"""A judge that runs the rule checks, then asks a chat model (any `ChatCompleter`) about the rest."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from medical_team.game.judging import JudgeRequest, JudgeVerdict
from medical_team.judge.outage import ConsecutiveFailures
from medical_team.judge.prompt import Message, judge_messages, parse_judge_output
from medical_team.judge.rules import RuleFinding, apply_unfaithful, check_rules
from medical_team.judge.settings import RuleSettings, packaged_judge_settings
from medical_team.judge.stats import JudgeCounters


@dataclass(frozen=True)
class CompletionFailure:
    """A conversation the backend could not answer (after its retries), with the reason."""

    reason: str


Completion = str | CompletionFailure


class ChatCompleter(Protocol):
    """A chat model that answers a batch of conversations, one completion (or failure) per conversation."""

    name: str  # where the model lives, for messages (a path, an id or a URL)

    def complete(self, conversations: Sequence[list[Message]]) -> list[Completion]:
        """Answer each conversation in order; an unreachable backend gives `CompletionFailure`s, not exceptions."""
        ...


class ModelJudge:
    """Rule checks first, then the model in batches of `batch_size`; unparseable output and failures are ties."""

    def __init__(
        self,
        completer: ChatCompleter,
        *,
        rules: RuleSettings | None = None,
        batch_size: int = 16,
        max_consecutive_failures: int | None = None,
    ) -> None:
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        self.completer = completer
        self.rules = rules or packaged_judge_settings().rules  # None: configs/medplay.yaml's bounds
        self.batch_size = batch_size
        self.stats = JudgeCounters()
        self.failures = ConsecutiveFailures(completer.name, max_consecutive_failures)

    def judge(self, requests: Sequence[JudgeRequest]) -> list[JudgeVerdict]:
        """One verdict per request, in order; raises only `JudgeUnavailableError` after too many failed batches."""
        start = time.perf_counter()
        findings = [check_rules(request, self.rules) for request in requests]
        verdicts: list[JudgeVerdict | None] = [finding.verdict for finding in findings]
        pending = [i for i, verdict in enumerate(verdicts) if verdict is None]
        for offset in range(0, len(pending), self.batch_size):
            chunk = pending[offset : offset + self.batch_size]
            for i, verdict in zip(chunk, self._ask_model([requests[i] for i in chunk], [findings[i] for i in chunk])):
                verdicts[i] = verdict
        done = [verdict for verdict in verdicts if verdict is not None]
        self.stats.record(done, time.perf_counter() - start, model_calls=len(pending))
        return done

    def _ask_model(self, requests: list[JudgeRequest], findings: list[RuleFinding]) -> list[JudgeVerdict]:
        completions = self.completer.complete([judge_messages(request) for request in requests])
        if len(completions) != len(requests):
            completions = [CompletionFailure(f"backend gave {len(completions)} answers for {len(requests)}")] * len(
                requests
            )
        verdicts = [
            JudgeVerdict.as_tie(f"judge backend unavailable: {c.reason}")
            if isinstance(c, CompletionFailure)
            else apply_unfaithful(parse_judge_output(c), finding)
            for c, finding in zip(completions, findings)
        ]
        failures = [c for c in completions if isinstance(c, CompletionFailure)]
        if failures and len(failures) == len(completions):
            self.stats.record_failed_batch()
            self.failures.failure(failures[0].reason)
        else:
            self.failures.success()
        return verdicts
