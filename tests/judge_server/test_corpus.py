"""Every broken request in tests/corpus/json gets its 4xx answer with a reason from a real judge server."""

from __future__ import annotations

from pathlib import Path

import pytest
from judge_helpers import HTTP, rules_app

CORPUS = Path(__file__).resolve().parent.parent / "corpus" / "json"
FILES = sorted(CORPUS.glob("*.json"))
PATHS = {"v1-judge": "/v1/judge", "judge": "/judge"}


def test_corpus_is_complete() -> None:
    assert len(FILES) >= 8
    assert {f.name.split(".")[0] for f in FILES} == set(PATHS)


@pytest.fixture(scope="module")
def url() -> str:
    """A judge server with the default 8 MiB body limit and at most 8 games per batch."""
    from medical_team.judge_server.serving import BackgroundServer

    with BackgroundServer(rules_app(max_body_bytes=8 * 1024 * 1024, max_batch=8)) as server:
        yield server.url


@pytest.mark.parametrize("path", FILES, ids=[f.name for f in FILES])
def test_broken_request_gets_its_4xx(url: str, path: Path) -> None:
    endpoint, status = path.name.split(".")[:2]
    response = HTTP.post(
        f"{url}{PATHS[endpoint]}", content=path.read_bytes(), headers={"content-type": "application/json"}
    )
    assert response.status_code == int(status), response.text
    detail = response.json()["detail"]
    assert isinstance(detail, str) and len(detail) > 10
    assert HTTP.get(f"{url}/health").status_code == 200
