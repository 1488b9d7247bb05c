"""`medplay judge serve` through argv: a real server process that answers and exits 0 on SIGTERM; bad options."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import time

import httpx
import pytest
from judge_helpers import HTTP, make_request, wire
from processes import free_port

from medical_team.cli import main
from medical_team.data.records import GameSeed

MEDPLAY = [sys.executable, "-c", "import sys; from medical_team.cli import main; sys.exit(main(sys.argv[1:]))"]


def _wait_ready(url: str, process: subprocess.Popen) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if HTTP.get(f"{url}/ready", timeout=1).status_code == 200:
                return
        except httpx.TransportError:
            pass
        assert process.poll() is None, "server exited early"
        time.sleep(0.1)
    raise AssertionError("server never became ready")


def test_serve_answers_and_exits_0_on_sigterm(harmful: GameSeed) -> None:
    port = free_port()
    args = ["judge", "serve", "--backend", "rules", "--port", str(port)]
    process = subprocess.Popen([*MEDPLAY, *args], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_ready(url, process)
        response = HTTP.post(f"{url}/v1/judge", json=wire([make_request(harmful, "")]))
        assert response.json()["verdicts"][0]["reason"] == "rule:empty_rewrite"
    finally:
        process.send_signal(signal.SIGTERM)
        output, _ = process.communicate(timeout=30)
    assert process.returncode == 0, output
    assert f"Uvicorn running on http://127.0.0.1:{port}" in output and "Finished server process" in output
    assert '"POST /v1/judge HTTP/1.1" 200' in output and "empty_rewrite" not in output  # paths logged, not bodies


def test_port_in_use_is_a_user_error() -> None:
    # A real process: uvicorn configures logging on the process's stderr, which must not be pytest's capture.
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = subprocess.run([*MEDPLAY, "judge", "serve", "--port", str(port)],
                              capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 2
    assert f"could not listen on 127.0.0.1:{port}" in done.stderr and "Traceback" not in done.stderr


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--backend", "openai", "--model", "m"], "field '--url': backend 'openai' needs the endpoint"),
        (["--backend", "openai", "--url", "ftp://x", "--model", "m"], "'ftp://x' is not an http(s) URL"),
        (["--backend", "hf", "--model", "/nonexistent/model"], "model directory /nonexistent/model does not exist"),
        (["--min-length-ratio", "1.5"], "length ratio band must satisfy"),
        (["--max-batch", "0"], "max_batch must be >= 1"),
        (["--reward-scheme", "winner_takes_all"], "reward scheme 'winner_takes_all' is unknown"),
    ],
)
def test_bad_options_exit_2_with_one_line(argv: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["judge", "serve", *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("medplay judge: error: ") and message in err and "Traceback" not in err
