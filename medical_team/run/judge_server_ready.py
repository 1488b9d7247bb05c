"""Whether the judge's vLLM server answers: the launcher's supervision and the agent loops' first judged game ask.

The launcher starts the server (medical_team/launcher/judge/served_judge.py) and probes it while it starts and runs;
an agent-loop worker waits here, on the judge-executor thread of its first judged game, until it answers.
"""

from __future__ import annotations

import time

import httpx

from medical_team.run.failures import JudgeServerError


def answers(url: str, timeout_s: float = 5.0) -> bool:
    """Whether an OpenAI-compatible server answers `GET {url}/models` with 200."""
    try:
        return httpx.get(f"{url}/models", timeout=timeout_s).status_code == 200
    except httpx.HTTPError:
        return False


def healthy(url: str, timeout_s: float) -> bool:
    """Whether vLLM's server answers `GET /health` (its engine alive) with 200 within `timeout_s`."""
    try:
        return httpx.get(f"{url.removesuffix('/v1')}/health", timeout=timeout_s).status_code == 200
    except httpx.HTTPError:
        return False


def wait_until_served(url: str, timeout_s: float, poll_s: float = 1.0) -> None:
    """Block until the judge's server answers; JudgeServerError after `timeout_s` (the launcher stops a dead one)."""
    deadline = time.monotonic() + timeout_s
    while not answers(url):
        if time.monotonic() > deadline:
            raise JudgeServerError(
                f"the judge's vLLM server at {url} did not answer within {timeout_s:.0f} s "
                "(medplay.judge.serve.startup_timeout_s)"
            )
        time.sleep(poll_s)
