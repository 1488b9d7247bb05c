"""The HTTP client of the judge's callers (`HttpJudge`, the openai backend): one pool of connections shared by the
threads that call the judge, which never closes a connection under a request.

Many threads share one client (an agent-loop worker's judge calls, medplay.judge.serve.concurrency of them). httpx's
default pool keeps 20 connections alive, and httpcore 1.0.9 closes an idle one whenever the pool holds more than that
(it counts every connection, not only the idle ones); it may close one it has just handed to a waiting request, whose
thread then waits for an answer on a closed socket until its read timeout (encode/httpcore#1110). 64 threads on one
client had 8 tries fail in the judge server benchmark's 57,500 calls, one after 300 s (the read timeout), and opened a
new connection for one request in four. A pool that keeps alive as many connections as it may open closes none of
them while it serves (docs/benchmarks.md, "The judge server under load").
"""

from __future__ import annotations

import httpx

MAX_CONNECTIONS = 128  # a client's connections at most, every one kept alive; more callers wait for one


def judge_http_client(base_url: str, *, timeout_s: float, headers: dict[str, str]) -> httpx.Client:
    """A pooled client of `base_url` for threads to share: every connection it opens is kept alive."""
    limits = httpx.Limits(max_connections=MAX_CONNECTIONS, max_keepalive_connections=MAX_CONNECTIONS)
    return httpx.Client(base_url=base_url, timeout=timeout_s, headers=headers, limits=limits)
