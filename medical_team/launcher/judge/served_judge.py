"""The `vllm` judge backend: a vLLM OpenAI-compatible server that `medplay train` starts, watches and stops.

`serve_judge` starts it (served_judge_process.JudgeServer, with the command of served_judge_command.py) at
the address the run plan fixed (served_judge_plan.py), beside Ray and the trainer, and stops it when training
ends or the launcher gets a signal; when it fails, at any moment, the launcher's main thread is interrupted so
that the run ends within seconds. The agent loops reach it through the OpenAI-compatible judge client
(`medical_team.judge.openai_backend`). Why not verl's `reward.reward_model` servers: docs/judge.md, "The served
judge"; its supervision: docs/reliability.md, "The served judge fails".
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from medical_team.caches.cache_folder import judge_server_cache_environment
from medical_team.hardware.host_facts import CUDA_VISIBLE_DEVICES
from medical_team.launcher.console.console import say
from medical_team.launcher.console.startup import started_line
from medical_team.launcher.judge.served_judge_command import vllm_command
from medical_team.launcher.judge.served_judge_process import STAGE, JudgeServer
from medical_team.run.failures import JudgeServerError

if TYPE_CHECKING:
    from medical_team.launcher.plan.run_plan import PlannedRun

LOG_NAME = "judge-server.log"
# After a failure, the launcher's main thread gets this long to unwind (Ray's shutdown) before the process ends.
GIVE_UP_AFTER_S = 6.0


class _JudgeFailed(KeyboardInterrupt):
    """Raised in the launcher's main thread when the judge's server failed.

    A KeyboardInterrupt because Ray's blocking `ray.get` lets only that (and SystemExit) out of a signal
    handler, as a plain KeyboardInterrupt: `serve_judge` then raises the failure the server recorded.
    """


def judge_environment(run: PlannedRun) -> dict[str, str]:
    """What the judge's server process gets over the launcher's environment: its compilation caches and, on a host
    with several GPUs, its device (its own GPU, or the policy's first: the run plan's `judge_devices`)."""
    environment = judge_server_cache_environment(Path(run.settings.cache_dir))
    if run.plan.judge_devices is not None:
        environment[CUDA_VISIBLE_DEVICES] = run.plan.judge_devices
    return environment


@contextmanager
def serve_judge(
    run: PlannedRun, give_up: Callable[[JudgeServerError], None] | None = None
) -> Iterator[JudgeServer | None]:
    """For the `vllm` backend: start the judge's server at the run plan's `medplay.judge.url`, stop it afterwards.

    The server starts at the same time as Ray and the trainer's workers: this returns at once, daemon
    threads watch it (`JudgeServer.supervise`), and the agent loops wait for it only before their first
    judged game (`judge_factory.selfplay_judge`). When it fails, at any moment, the main thread is
    interrupted and leaves this block with the JudgeServerError; if it has not left it GIVE_UP_AFTER_S
    later (a blocking call that ignores the interrupt), the server is killed and `give_up` ends the run.
    """
    judge = run.settings.judge
    if not judge.kind.served_here:
        yield None
        return
    model = Path(judge.model or "")
    port = urlsplit(judge.url or "").port
    if port is None:
        raise RuntimeError(f"medplay.judge.url {judge.url!r} names no port: the run plan sets it (run_plan.py)")
    server = JudgeServer(
        vllm_command(model, port, judge.serve, on_cpu=run.plan.on_cpu),
        port,
        Path(run.settings.output_dir) / LOG_NAME,
        judge.serve.startup_timeout_s,
        judge_environment(run),
    )
    main_thread = threading.main_thread().ident
    guard = threading.Lock()
    deadlines: list[threading.Timer] = []

    def on_failure(error: JudgeServerError) -> None:
        with guard:
            if main_thread is None:
                return
            deadline = threading.Timer(GIVE_UP_AFTER_S, end_now, args=(error,))
            deadline.daemon = True
            deadline.start()
            deadlines.append(deadline)
            signal.pthread_kill(main_thread, signal.SIGUSR1)

    def end_now(error: JudgeServerError) -> None:
        server.kill()
        if give_up is not None:
            give_up(error)

    def interrupt(_signum: int, _frame: object) -> None:
        raise _JudgeFailed

    previous = signal.signal(signal.SIGUSR1, interrupt)
    try:
        say(started_line(STAGE, f"vLLM for {model} on {server.url} (log: {server.log_file})"))
        server.launch()
        server.supervise(on_failure)
        yield server
    except KeyboardInterrupt:
        if server.failure is None:
            raise
        raise server.failure from None
    finally:
        server.stop()
        with guard:
            main_thread = None  # no interrupt from here on
        signal.signal(signal.SIGUSR1, previous)
        for deadline in deadlines:
            deadline.cancel()
