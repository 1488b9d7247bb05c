"""Fuzz the judge server over real HTTP: 2,400 random and malformed requests, never a 500, /health always up.

The requests come from a seeded generator (reproducible): mutated valid bodies, broken bytes, odd
content types, methods and paths.
"""

from __future__ import annotations

import json
import random
from collections import Counter
from collections.abc import Callable
from typing import Any

import httpx
import pytest
from judge_helpers import make_request, reworded, rules_app, wire

from medical_team.common.vocab import Label
from medical_team.data.records import GameSeed
from medical_team.game.prompts import THINKING_PREFIX

REQUESTS = 2_400
STRANGE_VALUES: list[Any] = [
    None,
    True,
    0,
    -1,
    2**70,
    1e308,
    -0.0,
    float("nan"),
    "",
    " ",
    "\x00",
    "\ud800",
    "\U0001f9a0" * 50,
    "x" * 120_000,  # over the per-field limit
    "y" * 300_000,  # over the body limit
    "error",
    "no_error",
    "adversarial_benign",
    "vanilla_harmful",
    [],
    {},
    [[[[[]]]]],
    {"$ref": "#"},
    ["error", 1, None],
]
CONTENT_TYPES = [
    "application/json",
    "application/json; charset=latin-1",
    "application/vnd.api+json",
    "text/plain",
    "application/x-www-form-urlencoded",
    "multipart/form-data",
    None,
]


def _paths(tree: Any, prefix: tuple = ()) -> list[tuple]:
    """Every path (tuple of keys/indices) into a JSON tree."""
    found = [prefix]
    if isinstance(tree, dict):
        for key, value in tree.items():
            found += _paths(value, (*prefix, key))
    elif isinstance(tree, list):
        for index, value in enumerate(tree):
            found += _paths(value, (*prefix, index))
    return found


def _mutate(rng: random.Random, body: Any) -> Any:
    """Replace, delete or add one node of a JSON tree (a copy)."""
    body = json.loads(json.dumps(body))
    path = rng.choice(_paths(body)[1:])
    parent = body
    for key in path[:-1]:
        parent = parent[key]
    action = rng.random()
    if action < 0.6:
        parent[path[-1]] = rng.choice(STRANGE_VALUES)
    elif action < 0.8:
        del parent[path[-1]]
    elif isinstance(parent, dict):
        parent[rng.choice(["extra", "games", "query", "labels", "prompts", "__proto__"])] = rng.choice(STRANGE_VALUES)
    else:
        parent.extend(parent * rng.randint(1, 10))
    return body


def _encode(rng: random.Random, body: Any) -> bytes:
    """Serialise, sometimes with invalid escapes or NaN (Python's json allows both)."""
    return json.dumps(body, ensure_ascii=rng.random() < 0.5, allow_nan=True).encode("utf-8", "surrogatepass")


def _corrupt(rng: random.Random, data: bytes) -> bytes:
    """Damage raw bytes: truncate, splice garbage, flip bytes, or replace everything."""
    choice = rng.randrange(6)
    if choice == 0:
        return data[: rng.randrange(len(data) + 1)]
    if choice == 1:
        cut = rng.randrange(len(data) + 1)
        return data[:cut] + rng.randbytes(rng.randint(1, 20)) + data[cut:]
    if choice == 2:
        raw = bytearray(data)
        for _ in range(rng.randint(1, 5)):
            raw[rng.randrange(len(raw))] = rng.randrange(256)
        return bytes(raw)
    if choice == 3:
        return rng.randbytes(rng.randint(0, 300))
    if choice == 4:
        depth = rng.randint(100, 30_000)
        return b'{"games": ' + b"[" * depth + b"]" * depth + b"}"
    return b"\xef\xbb\xbf" + data  # UTF-8 byte order mark


@pytest.fixture(scope="module")
def valid_bodies(seed_pairs: list[tuple[GameSeed, GameSeed]]) -> dict[str, Any]:
    """One valid body per POST endpoint."""
    harmful, benign = seed_pairs[5]
    judge_body = wire([make_request(harmful, reworded(harmful)), make_request(benign, benign.text, Label.NO_ERROR)])
    prompt = "<|im_start|>user\nIs there an error?<|im_end|>\n<|im_start|>assistant\n" + THINKING_PREFIX
    answer = "Looks right. </think> <answer>verdict: NO_ERROR</answer>"
    reward_body = {"query": [prompt + answer], "prompts": [prompt], "labels": ["no_error"]}
    return {"/v1/judge": judge_body, "/judge": reward_body}


def _one_request(rng: random.Random, bodies: dict[str, Any]) -> Callable[[httpx.Client], httpx.Response]:
    """A random request: mostly mutated bodies, then raw damage, odd headers, methods and paths."""
    path = rng.choice(list(bodies))
    kind = rng.random()
    headers = {"content-type": "application/json"}
    if kind < 0.45:
        content = _encode(rng, _mutate(rng, bodies[path]))
    elif kind < 0.75:
        content = _corrupt(rng, _encode(rng, bodies[path]))
    elif kind < 0.85:
        content = _encode(rng, bodies[path])
        content_type = rng.choice(CONTENT_TYPES)
        headers = {"content-type": content_type} if content_type else {}
    elif kind < 0.95:
        content = _encode(rng, bodies[path])
    else:
        method = rng.choice(["GET", "PUT", "DELETE", "PATCH", "OPTIONS"])
        odd_path = rng.choice(["/v1/judge", "/judge", "/v2/judge", "/health/../judge", "/%00", "/" + "a" * 2000])
        return lambda client: client.request(method, odd_path)
    return lambda client: client.post(path, content=content, headers=headers)


def test_fuzzed_requests_never_get_a_500(serve, valid_bodies: dict[str, Any]) -> None:
    url = serve(rules_app(max_body_bytes=256 * 1024, max_batch=8)).url
    rng = random.Random(20_240_611)
    statuses: Counter[int] = Counter()
    with httpx.Client(base_url=url, timeout=30) as client:
        for i in range(REQUESTS):
            response = _one_request(rng, valid_bodies)(client)
            statuses[response.status_code] += 1
            assert response.status_code < 500, f"request {i}: {response.status_code} {response.text[:300]}"
            if response.status_code >= 400 and response.headers.get("content-type") == "application/json":
                assert response.json()["detail"], f"request {i}: 4xx without a reason"
            if i % 100 == 0:
                assert client.get("/health").json() == {"status": "ok"}
        assert client.get("/health").status_code == 200 and client.get("/ready").status_code == 200
    assert sum(statuses.values()) == REQUESTS
    # the generator reaches the interesting answers, not only one kind of rejection
    assert {200, 400, 404, 405, 413, 422} <= set(statuses), statuses
