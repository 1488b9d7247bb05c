"""A `ChatCompleter` for any OpenAI-compatible chat endpoint (`vllm serve`, a hosted API), over httpx."""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

from medical_team.judge.http_pool import judge_http_client
from medical_team.judge.model_judge import Completion, CompletionFailure
from medical_team.judge.prompt import Message
from medical_team.judge.retry import RetryPolicy, describe_http_error


class OpenAIChatCompleter:
    """Sends each conversation to `{base_url}/chat/completions` (greedy), `concurrency` at a time."""

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key: str | None = None,
        timeout_s: float = 120.0,
        max_tokens: int = 256,
        concurrency: int = 8,
        retry: RetryPolicy | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.name = f"{self.base_url} (model {model})"
        self.model = model
        self.max_tokens = max_tokens
        self.timeout_s = timeout_s  # also how long an overloaded endpoint (429) is waited for
        self.concurrency = concurrency
        self.retry = retry or RetryPolicy()
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = judge_http_client(self.base_url, timeout_s=timeout_s, headers=headers)

    def complete(self, conversations: Sequence[list[Message]]) -> list[Completion]:
        """One completion or `CompletionFailure` per conversation, in order."""
        if not conversations:
            return []
        with ThreadPoolExecutor(max_workers=min(self.concurrency, len(conversations))) as pool:
            return list(pool.map(self._complete_one, conversations))

    def _complete_one(self, messages: list[Message]) -> Completion:
        try:
            for attempt in self.retry.retrying(overload_s=self.timeout_s):
                with attempt:
                    return self._post(messages)
        except Exception as error:  # noqa: BLE001 - any failure of one call becomes a tie, never a crash
            return CompletionFailure(describe_http_error(error))
        raise AssertionError("unreachable: tenacity either returns or raises")

    def _post(self, messages: list[Message]) -> Completion:
        body = {"model": self.model, "messages": messages, "temperature": 0.0, "max_tokens": self.max_tokens}
        response = self._client.post("/chat/completions", json=body)
        response.raise_for_status()
        try:
            content = response.json()["choices"][0]["message"]["content"]
        except (ValueError, KeyError, IndexError, TypeError):
            return CompletionFailure(f"response is not an OpenAI chat completion: {response.text[:200]}")
        return content if isinstance(content, str) else CompletionFailure("completion content is not text")

    def close(self) -> None:
        """Close the HTTP connection pool."""
        self._client.close()
