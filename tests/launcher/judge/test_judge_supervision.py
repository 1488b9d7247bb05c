"""The served judge's supervision with real server processes (tests/launcher/judge/fake_judge_server.py), one per failure.

A server that exits at start, one that never answers, one whose log prints each fatal line, one that stops
answering (SIGSTOP) or exits after it answered; the launcher's main thread interrupted or, when it ignores the
interrupt, the run ended by the deadline; games waiting on the judge said and relayed; SIGTERM while they wait.
The real vLLM and `medplay train` run in tests/e2e/test_judge_failures_cpu.py.
"""

from __future__ import annotations

import os
import re
import signal
import sys
import threading
import time
from dataclasses import replace
from pathlib import Path

import pytest
from judge_folders import served_judge_run
from processes import free_port, sigterm_once_ready

from medical_team.agent_loop.judge_waits import JudgeWaits
from medical_team.launcher.console.judge_wait_relay import JudgeWaitRelay
from medical_team.launcher.failures.run_errors import failure_report
from medical_team.launcher.judge import served_judge
from medical_team.launcher.judge.served_judge_command import FATAL_LINES, MODEL_KNOB
from medical_team.launcher.judge.served_judge_process import (
    SERVING,
    START_UP,
    TIMEOUT_KNOB,
    JudgeServer,
    Supervision,
)
from medical_team.reliability.stop_request import StoppedWhileWaitingError
from medical_team.run.failures import JUDGE_FAILED_EXIT, OUT_OF_MEMORY_EXIT, JudgeServerError
from medical_team.run.judge_wait_lines import OVER, WAIT_MARK

FAKE = str(Path(__file__).with_name("fake_judge_server.py"))
QUICK = Supervision(poll_s=0.2, answer_timeout_s=0.5, report_every_s=1.0, health_every_s=0.2, health_timeout_s=0.5)
NOSUCH = "ValueError: The checkpoint you are trying to load has model type `nosuch` but Transformers does not recognize this architecture"
BOUND_S = 10.0  # "within seconds": what the issue asks of every failure below


def fake_server(tmp_path: Path, mode: str, text: str = "", startup_timeout_s: float = 120) -> JudgeServer:
    """A JudgeServer whose command is the fake server in `mode`, watched with QUICK periods."""
    port = free_port()
    command = [sys.executable, FAKE, mode, str(port), text]
    return JudgeServer(command, port, tmp_path / "judge-server.log", startup_timeout_s, supervision=QUICK)


def failed_within(server: JudgeServer, seconds: float) -> JudgeServerError:
    """Start the server and return its failure, which must come within `seconds`."""
    started = time.monotonic()
    with pytest.raises(JudgeServerError) as caught:
        server.start()
    assert time.monotonic() - started < seconds
    return caught.value


def test_a_server_that_exits_at_start_fails_with_its_log_and_the_knob(tmp_path, capsys):
    server = fake_server(tmp_path, "exit", NOSUCH)
    error = failed_within(server, BOUND_S)
    assert str(error).startswith(f"{START_UP}: the judge's vLLM server exited with status 1; {MODEL_KNOB}; its log: ")
    assert str(error).endswith(NOSUCH) and error.exit_status == JUDGE_FAILED_EXIT
    err = capsys.readouterr().err
    assert f"judge server: failed ({START_UP}); the last lines of {server.log_file}:" in err and f"    {NOSUCH}" in err


@pytest.mark.parametrize("fatal", FATAL_LINES, ids=[fatal.text for fatal in FATAL_LINES])
def test_each_fatal_line_ends_start_up_with_its_knob(tmp_path, fatal):
    line = f"(EngineCore_DP0 pid=7) ERROR 11-26 03:29:40 [core.py:708] {fatal.text}: details"
    error = failed_within(fake_server(tmp_path, "fatal", line), BOUND_S)
    assert str(error).startswith(f"{START_UP}: the judge's vLLM server logged a fatal line: {line}; {fatal.knob}")
    assert error.exit_status == (OUT_OF_MEMORY_EXIT if fatal.memory else JUDGE_FAILED_EXIT)


def test_a_server_that_never_answers_is_reported_while_it_starts(tmp_path, capsys):
    server = fake_server(tmp_path, "silent")
    server.launch()
    server.supervise()
    try:
        said: list[str] = []
        deadline = time.monotonic() + 60  # a hang guard: the lines come every second
        listening = f"fake judge server: silent on port {server.url.split(':')[2][:-3]}"
        while not (len(said) >= 2 and said[-1].endswith(listening)) and time.monotonic() < deadline:
            time.sleep(0.2)
            said += [line for line in capsys.readouterr().out.splitlines() if "waiting for its first answer" in line]
        assert len(said) >= 2, said
        assert re.fullmatch(r"medplay: judge server: waiting for its first answer, \d+ s so far; its log: .+", said[0])
        assert not server.ready.is_set() and server.failure is None
    finally:
        server.stop()


def test_a_server_that_never_answers_fails_at_the_startup_timeout(tmp_path):
    error = failed_within(fake_server(tmp_path, "silent", startup_timeout_s=1), BOUND_S)
    assert str(error).startswith(f"{START_UP}: the judge's vLLM server did not answer within 1 s; {TIMEOUT_KNOB}")


def serving(tmp_path: Path, watch: Supervision) -> tuple[JudgeServer, list[JudgeServerError], threading.Event]:
    """A fake server that answered, watched as `watch` says: its failures are collected."""
    server = fake_server(tmp_path, "serve")
    server.supervision = watch
    failures: list[JudgeServerError] = []
    failed = threading.Event()
    server.launch()
    server.supervise(lambda error: (failures.append(error), failed.set()))
    server.await_ready()
    return server, failures, failed


def test_a_server_that_stops_answering_after_it_was_ready_is_found_by_the_health_probe(tmp_path):
    server, failures, failed = serving(tmp_path, replace(QUICK, health_timeout_s=1.0))
    assert server.process is not None
    try:
        assert not failed.wait(2.0), failures  # ten probes of a healthy server: no failure
        os.kill(server.process.pid, signal.SIGSTOP)  # alive, listening, never answering
        stopped = time.monotonic()
        assert failed.wait(60), "no failure within 60 s of the server's last answer"
        # Three probes of 1 s, 0.2 s apart: found after about 4 s; the product's periods bound it at 45 s.
        assert time.monotonic() - stopped < 30
    finally:
        os.kill(server.process.pid, signal.SIGCONT)
        server.stop()
    assert failures[0].phase == SERVING
    assert str(failures[0]).startswith(f"{SERVING}: the judge's vLLM server stopped answering: 3 health probes")


def test_a_server_that_exits_after_it_was_ready_fails_at_once(tmp_path):
    server, failures, failed = serving(tmp_path, replace(QUICK, health_every_s=60))  # its exit, not a probe
    assert server.process is not None
    server.process.kill()
    assert failed.wait(BOUND_S)
    assert str(failures[0]).startswith(f"{SERVING}: the judge's vLLM server exited with status -9")
    assert len(failures) == 1


def test_the_product_finds_a_silent_server_within_60_s() -> None:
    watch = Supervision()
    assert watch.health_failures * (watch.health_every_s + watch.health_timeout_s) <= 45


def test_a_launcher_that_ignores_the_interrupt_is_ended_by_the_deadline(tmp_path, monkeypatch):
    """The main thread swallows the interrupt (as a blocking call might): `give_up` runs GIVE_UP_AFTER_S later."""
    command = [sys.executable, FAKE, "exit", "0", NOSUCH]
    monkeypatch.setattr(served_judge, "vllm_command", lambda *args, **kwargs: command)
    run = served_judge_run(tmp_path)
    given_up: list[BaseException] = []
    done = threading.Event()

    def give_up(error: BaseException) -> None:
        given_up.append(error)
        done.set()

    with served_judge.serve_judge(run, give_up) as server:
        deadline = time.monotonic() + 60  # a hang guard
        while not done.is_set() and time.monotonic() < deadline:
            try:
                time.sleep(0.1)
            except KeyboardInterrupt:
                interrupted = time.monotonic()
        assert done.is_set()
        assert served_judge.GIVE_UP_AFTER_S - 1 < time.monotonic() - interrupted < BOUND_S
        assert server is not None and server.process is not None and server.process.poll() is not None
    assert str(given_up[0]).startswith(f"{START_UP}: the judge's vLLM server exited with status 1")


def test_failure_reports_give_each_documented_exit_status() -> None:
    judge = JudgeServerError(f"{START_UP}: the judge's vLLM server exited with status 1; ...")
    assert failure_report(judge) == (f"medplay train: stopped: {judge}", JUDGE_FAILED_EXIT)
    judge.exit_status = OUT_OF_MEMORY_EXIT
    assert failure_report(judge)[1] == OUT_OF_MEMORY_EXIT
    stopped = StoppedWhileWaitingError("SIGTERM received while 4 game(s) waiting for the judge")
    assert failure_report(stopped) == (f"medplay train: stopped: {stopped}", 143)
    assert failure_report(RuntimeError("boom")) == ("medplay train: failed: RuntimeError: boom", 1)


def test_a_game_waiting_on_the_judge_is_said_then_over(capsys):
    """The worker's reporting thread says the wait while it lasts, and OVER once it ended."""
    waits = JudgeWaits("http://judge/v1", every_s=0.2)
    release = threading.Event()

    def game() -> None:
        with waits.waiting():
            release.wait(60)

    said: list[str] = []

    def wait_for(text: str) -> None:
        deadline = time.monotonic() + 60  # a hang guard: the thread says a line every 0.2 s
        while not any(text in line for line in said) and time.monotonic() < deadline:
            time.sleep(0.1)
            said.extend(capsys.readouterr().out.splitlines())

    thread = threading.Thread(target=game)
    thread.start()
    wait_for(f"{WAIT_MARK} 1 game(s) waiting for the judge at http://judge/v1, the longest for ")
    release.set()
    thread.join()
    wait_for(f"{WAIT_MARK} {OVER}: the judge at http://judge/v1 answered the games that waited")
    assert any(OVER in line for line in said)


def test_a_wait_line_names_the_games_and_the_longest_wait(capsys) -> None:
    waits = JudgeWaits("http://judge/v1", every_s=0.1)
    with waits.waiting(), waits.waiting():
        time.sleep(0.2)
        line = waits.line()
    assert line is not None and line.startswith(f"{WAIT_MARK} 2 game(s) waiting for the judge at http://judge/v1")
    # The reporting thread says OVER once the waits ended: read it here, not in a later test's output.
    said, deadline = "", time.monotonic() + 60  # a hang guard: the thread looks every 0.1 s
    while OVER not in said and time.monotonic() < deadline:
        time.sleep(0.05)
        said += capsys.readouterr().out
    assert f"{WAIT_MARK} {OVER}: the judge at http://judge/v1 answered the games that waited" in said


def test_the_relay_says_workers_wait_lines_and_knows_who_still_waits(tmp_path, capsys):
    log = tmp_path / "train.log"
    log.write_text("an earlier run's line\n")
    with JudgeWaitRelay(log, poll_s=3600) as relay:
        said = "2 game(s) waiting for the judge at http://j/v1, the longest for 30 s"
        waiting = f"{WAIT_MARK} {said}"
        with log.open("a") as handle:
            handle.write(f"(AgentLoopWorker pid=11) {waiting}\n(AgentLoopWorker pid=12) {waiting}\nother\n")
        relay.poll()
        assert relay.waiting() == said
        with log.open("a") as handle:
            handle.write(f"(AgentLoopWorker pid=11) {WAIT_MARK} {OVER}: the judge answered\n")
        relay.poll()
        assert relay.waiting() == said  # worker 12 still waits
        with log.open("a") as handle:
            handle.write(f"(AgentLoopWorker pid=12) {WAIT_MARK} {OVER}: the judge answered\n")
        relay.poll()
        assert relay.waiting() is None
    out = capsys.readouterr().out.splitlines()
    assert out[:2] == [waiting, waiting] and len(out) == 4


def test_sigterm_while_games_wait_on_the_judge_stops_at_once(tmp_path):
    """The stop request is written and the main thread interrupted; the grace period is not waited out."""
    status, out = sigterm_once_ready(tmp_path, "lambda: '2 game(s) waiting for the judge'")
    assert status == 0
    assert "SIGTERM received while 2 game(s) waiting for the judge: stopping now" in out
    assert out.splitlines()[-1] == "stopped: SIGTERM received while 2 game(s) waiting for the judge"
    assert (tmp_path / "medplay_stop_requested").is_file()
