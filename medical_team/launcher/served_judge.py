"""The `vllm` judge backend: a vLLM OpenAI-compatible server that `medplay train` starts, watches and stops.

One job: start `python -m vllm.entrypoints.openai.api_server` for `medplay.judge.model` on loopback,
wait until it answers `/v1/models`, stop it (process group: TERM, then KILL) when training ends or
the launcher gets a signal, and end the run within seconds when it fails. The agent loops reach it
through the OpenAI-compatible judge client (`medical_team.judge.openai_backend`). Why not verl's
`reward.reward_model` servers: docs/judge.md, "The served judge".

Supervision (docs/reliability.md, "The served judge fails"): while it starts, a console line every
`report_every_s` with the seconds waited and its log's last line; a fatal line in its log (FATAL_LINES),
its exit, or (once it answered) `health_failures` failed `/health` probes in a row end the run with its
log's last lines, the phase (START_UP or SERVING) and the setting to change.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from omegaconf import DictConfig

from medical_team.appended_lines import AppendedLines
from medical_team.cache_folder import cache_dir, judge_server_cache_environment
from medical_team.console import say
from medical_team.errors import UserInputError
from medical_team.judge.settings import JudgeSettings, ServeSettings
from medical_team.launcher.startup import ready_line, started_line
from medical_team.verl_ext.judge_server_ready import answers, healthy
from medical_team.verl_ext.run_failures import JUDGE_START_UP, OUT_OF_MEMORY_EXIT, JudgeServerError

LOG_NAME = "judge-server.log"
STAGE = "judge server"  # its name on the console's startup lines
STOP_GRACE_S = 30.0
FAILED_STOP_GRACE_S = 2.0  # a failed server is not waited for: the run ends within seconds
# After a failure, the launcher's main thread gets this long to unwind (Ray's shutdown) before the process ends.
GIVE_UP_AFTER_S = 6.0
_PR_SET_PDEATHSIG = 1
# The phases a judge failure names: before its first answer, and after it.
START_UP = JUDGE_START_UP
SERVING = "judge serving"
TAIL_LINES = 12  # of its log, shown on the console when it fails
# The setting to change, by cause.
MODEL_KNOB = (
    "its log says why; check medplay.judge.model (a model this vLLM serves) and medplay.judge.serve.extra_args, "
    "or use a judge served elsewhere (medplay.judge.backend=openai with medplay.judge.url)"
)
TIMEOUT_KNOB = "raise medplay.judge.serve.startup_timeout_s if it was still loading"
SERVING_KNOB = (
    "its log says why; to train meanwhile, use a judge served elsewhere "
    "(medplay.judge.backend=openai with medplay.judge.url)"
)


@dataclass(frozen=True)
class FatalLine:
    """Text of a vLLM log line after which the server never answers, and the setting to change."""

    text: str
    knob: str
    memory: bool = False  # its memory was sized wrong: exit status OUT_OF_MEMORY_EXIT


FATAL_LINES = (
    FatalLine("EngineCore failed to start", MODEL_KNOB),
    FatalLine("Engine core initialization failed", MODEL_KNOB),
    FatalLine(
        "No available memory for the cache blocks",
        "its weights and activations left no room for a KV cache: raise medplay.judge.serve.gpu_memory_utilization "
        "or give the cache in bytes (medplay.judge.serve.kv_cache_memory_bytes)",
        memory=True,
    ),
    FatalLine(
        "Error in memory profiling",
        "another process changed the card's memory while vLLM measured it: give the judge's KV cache in bytes "
        "(medplay.judge.serve.kv_cache_memory_bytes), which needs no profiling",
        memory=True,
    ),
    FatalLine(
        "CUDA out of memory",
        "turn down medplay.judge.serve.gpu_memory_utilization (or kv_cache_memory_bytes), max_model_len, max_num_seqs",
        memory=True,
    ),
    FatalLine(
        "torch.OutOfMemoryError",
        "turn down medplay.judge.serve.gpu_memory_utilization (or kv_cache_memory_bytes), max_model_len, max_num_seqs",
        memory=True,
    ),
)


def resolve_judge_model(model: str) -> Path:
    """The local folder of the judge model (a folder, or a hub id already in the HF cache); else a UserInputError."""
    folder = Path(model).expanduser()
    if (folder / "config.json").is_file():
        return folder.resolve()
    if not folder.is_absolute() and model.count("/") == 1 and not model.startswith("."):
        try:
            from huggingface_hub import snapshot_download

            return Path(snapshot_download(model, local_files_only=True))
        except Exception:  # noqa: BLE001, S110 - not in the cache: the message below says what to do
            pass
    raise UserInputError(
        f"no Hugging Face model here; place the judge model there (e.g. `hf download {_hub_id(model)} --local-dir "
        f"{folder}` on a machine with network access, then copy or mount the folder), or set medplay.judge.model "
        "to a local folder; alternatives: medplay.judge.backend=openai with medplay.judge.url (a remote "
        "judge), or medplay.judge.backend=rules (smoke tests only)",
        file=str(folder),
        field="medplay.judge.model",
    )


def _hub_id(model: str) -> str:
    """The hub id a model folder like /models/google/medgemma-4b-it stands for (its last two parts)."""
    parts = Path(model).parts
    return "/".join(parts[-2:]) if len(parts) >= 2 else model


def free_port() -> int:
    """A loopback port nobody listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def served_url(port: int) -> str:
    """The OpenAI-compatible base URL of the judge's server on this loopback port."""
    return f"http://127.0.0.1:{port}/v1"


def served_judge_address(judge: JudgeSettings) -> dict[str, Any]:
    """For a judge served here (`vllm`), the run plan's `medplay.judge.url` and model folder; else nothing.

    The port is chosen before Ray starts (serve.port, else a free one) so that every process reads one
    address from the frozen config.
    """
    if not judge.kind.served_here:
        return {}
    return {
        "medplay.judge.url": served_url(judge.serve.port or free_port()),
        "medplay.judge.model": str(resolve_judge_model(judge.model or "")),
    }


def vllm_command(model: Path, port: int, serve: ServeSettings, *, on_cpu: bool) -> list[str]:
    """The vLLM OpenAI server's command line: the KV cache in bytes, and on a GPU the share vLLM checks is free."""
    command = [
        sys.executable, "-m", "vllm.entrypoints.openai.api_server",
        "--model", str(model), "--served-model-name", str(model),
        "--host", "127.0.0.1", "--port", str(port),
        "--dtype", "float32" if on_cpu and serve.dtype == "auto" else serve.dtype,
        "--max-num-seqs", str(serve.max_num_seqs),
        "--disable-log-stats",
        # The judge reads text only: no vision tower, no image processor, no warm-up of it (docs/judge.md).
        "--language-model-only",
    ]  # fmt: skip
    if serve.max_model_len is not None:
        command += ["--max-model-len", str(serve.max_model_len)]
    if serve.kv_cache_memory_bytes is not None:  # on a GPU the launcher sets it from the memory plan
        command += ["--kv-cache-memory-bytes", str(serve.kv_cache_memory_bytes)]
    if not on_cpu:  # with the bytes above, only vLLM's start-up check that this share of the card is free
        command += ["--gpu-memory-utilization", str(serve.gpu_memory_utilization)]
    if serve.enforce_eager or on_cpu:
        command.append("--enforce-eager")
    return [*command, *serve.extra_args]


# Runs the server's command after asking Linux for SIGTERM when the launcher dies, even by SIGKILL
# (an exec wrapper rather than `preexec_fn`, which is unsafe in a process with threads).
# Tests raise torch's out-of-memory error here, in the server's own process, with MEDPLAY_INJECT_OOM=judge_server.
_EXEC_WITH_PARENT_DEATH_SIGNAL = (
    "import ctypes, os, signal, sys\n"
    "if os.environ.get('MEDPLAY_INJECT_OOM') == 'judge_server':\n"
    "    import torch\n"
    "    raise torch.OutOfMemoryError('CUDA out of memory. Tried to allocate 9.27 GiB (injected by MEDPLAY_INJECT_OOM "
    "for a test) in judge_server')\n"
    "try:\n"
    f"    ctypes.CDLL(None).prctl({_PR_SET_PDEATHSIG}, signal.SIGTERM)\n"
    "except (OSError, AttributeError):\n"
    "    pass\n"
    "os.execvp(sys.argv[1], sys.argv[1:])\n"
)


@dataclass(frozen=True)
class Supervision:
    """How closely the launcher watches the judge's server (tests shorten the periods)."""

    poll_s: float = 1.0  # log lines, readiness
    answer_timeout_s: float = 2.0  # one readiness request while it starts
    report_every_s: float = 30.0  # a console line while it starts
    health_every_s: float = 5.0  # between `/health` probes once it answered
    health_timeout_s: float = 10.0
    # Failed probes in a row that end the run: a server that stops answering is found within
    # 3 × (period + timeout) = 45 s.
    health_failures: int = 3


class JudgeServer:
    """One vLLM OpenAI server process of the judge model, in its own process group, watched by daemon threads."""

    def __init__(
        self,
        command: list[str],
        port: int,
        log_file: Path,
        startup_timeout_s: float,
        environment: Mapping[str, str] | None = None,
        supervision: Supervision = Supervision(),
    ) -> None:
        self.command = command
        self.environment = dict(environment or {})  # set over this process's own for the server
        self.url = served_url(port)
        self.log_file = log_file
        self.startup_timeout_s = startup_timeout_s
        self.supervision = supervision
        self.process: subprocess.Popen[bytes] | None = None
        self.failure: JudgeServerError | None = None
        self.ready = threading.Event()
        self._settled = threading.Event()  # ready or failed
        self._stopping = threading.Event()
        self._lock = threading.Lock()
        self._on_failure: Callable[[JudgeServerError], None] = lambda error: None
        self._lines = AppendedLines(log_file)
        self._log_start = 0
        self._launched = 0.0

    def launch(self) -> None:
        """Start the server's process and return at once."""
        self.log_file.parent.mkdir(parents=True, exist_ok=True)
        self._lines.skip_existing()  # an earlier run's lines in the same log are not this server's
        self._log_start = self._lines.offset
        env = {key: value for key, value in os.environ.items() if not (key == "VLLM_CPU_KVCACHE_SPACE" and not value)}
        env.update(self.environment)
        with open(self.log_file, "ab") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-c", _EXEC_WITH_PARENT_DEATH_SIGNAL, *self.command],
                stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True,
            )  # fmt: skip
        self._launched = time.monotonic()

    def start(self) -> None:
        """Start the server and return once it answers; raise JudgeServerError (with its log's end) otherwise."""
        self.launch()
        self.supervise()
        self.await_ready()

    def supervise(self, on_failure: Callable[[JudgeServerError], None] | None = None) -> None:
        """Watch the launched server on daemon threads; `on_failure` gets its first failure, once."""
        if on_failure is not None:
            self._on_failure = on_failure
        threading.Thread(target=self._watch_exit, name="judge-server-exit", daemon=True).start()
        threading.Thread(target=self._watch_log, name="judge-server-log", daemon=True).start()

    def await_ready(self) -> None:
        """Block until the supervised server answers; raise its JudgeServerError if it failed first."""
        self._settled.wait()
        if self.failure is not None:
            raise self.failure

    def _watch_exit(self) -> None:
        """Its exit, at any moment, fails the run at once (nothing polls: `wait` returns as it ends)."""
        assert self.process is not None
        code = self.process.wait()
        found = self._fatal_line(self._log_since_launch().splitlines())
        if found is not None:  # the same failure the log's watcher would report, whichever thread is first
            self._fail_fatal(*found)
        else:
            self._fail(f"exited with status {code}", MODEL_KNOB if not self.ready.is_set() else SERVING_KNOB)

    def _log_since_launch(self) -> str:
        """What the server wrote to its log."""
        try:
            with self.log_file.open("rb") as log:
                log.seek(self._log_start)
                return log.read().decode(errors="replace")
        except OSError:
            return ""

    @staticmethod
    def _fatal_line(lines: list[str]) -> tuple[FatalLine, str] | None:
        """The first fatal line among `lines`, with its kind."""
        for line in lines:
            fatal = next((item for item in FATAL_LINES if item.text in line), None)
            if fatal is not None:
                return fatal, line
        return None

    def _fail_fatal(self, fatal: FatalLine, line: str) -> None:
        self._fail(f"logged a fatal line: {line.strip()[:300]}", fatal.knob, memory=fatal.memory)

    def _watch_log(self) -> None:
        """Read its new log lines for fatal ones; until it answers, poll it and say how long it has been waited for."""
        watch = self.supervision
        next_report = watch.report_every_s
        while not self._stop_watching(watch.poll_s):
            found = self._fatal_line(self._lines.read())
            if found is not None:
                self._fail_fatal(*found)
                return
            if self.ready.is_set():
                continue
            waited = time.monotonic() - self._launched
            if answers(self.url, watch.answer_timeout_s):
                self._became_ready(waited)
            elif waited > self.startup_timeout_s:
                self._fail(f"did not answer within {self.startup_timeout_s:.0f} s", TIMEOUT_KNOB)
                return
            elif waited >= next_report:
                next_report += watch.report_every_s
                say(f"medplay: {STAGE}: waiting for its first answer, {waited:.0f} s so far; {self._tail()}")

    def _became_ready(self, waited: float) -> None:
        """Say so, and start the health probes."""
        say(ready_line(STAGE, waited))
        self.ready.set()
        self._settled.set()
        threading.Thread(target=self._probe_health, name="judge-server-health", daemon=True).start()

    def _probe_health(self) -> None:
        """Probe `/health` every health_every_s; HEALTH_FAILURES failures in a row end the run."""
        watch = self.supervision
        failures = 0
        while not self._stop_watching(watch.health_every_s):
            if healthy(self.url, watch.health_timeout_s):
                failures = 0
                continue
            failures += 1
            if failures >= watch.health_failures:
                what = (
                    f"stopped answering: {failures} health probes in a row failed ({watch.health_timeout_s:.0f} s each)"
                )
                self._fail(what, SERVING_KNOB)
                return

    def _stop_watching(self, wait_s: float) -> bool:
        """Wait `wait_s`; true once the server failed or is being stopped."""
        return self._stopping.wait(wait_s) or self.failure is not None

    def _fail(self, what: str, knob: str, *, memory: bool = False) -> None:
        """Record the first failure, show its log's last lines on the console, and hand it to `on_failure`."""
        phase = SERVING if self.ready.is_set() else START_UP
        error = JudgeServerError(f"{phase}: the judge's vLLM server {what}; {knob}; {self._tail()}", phase=phase)
        if memory:
            error.exit_status = OUT_OF_MEMORY_EXIT
        with self._lock:
            if self.failure is not None or self._stopping.is_set():
                return
            self.failure = error
        say(f"medplay: {STAGE}: failed ({phase}); the last lines of {self.log_file}:", err=True)
        for line in self.last_lines(TAIL_LINES):
            say(f"    {line[:300]}", err=True)
        self._settled.set()  # after the lines: whoever waits for the start goes on with them said
        self._on_failure(error)

    def last_lines(self, count: int) -> list[str]:
        """The last `count` non-empty lines of its log."""
        try:
            text = self.log_file.read_text(errors="replace").splitlines()
        except OSError:
            return []
        return [line.rstrip() for line in text if line.strip()][-count:]

    def _tail(self) -> str:
        """Where its log is, with the log's last non-empty line."""
        last = self.last_lines(1)
        return f"its log: {self.log_file}" + (f": {last[0].strip()[:300]}" if last else "")

    def kill(self) -> None:
        """KILL the server's process group now."""
        with self._lock:
            self._stopping.set()
        if self.process is not None and self.process.poll() is None:
            try:
                os.killpg(self.process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

    def stop(self) -> None:
        """TERM the server's process group, KILL it after STOP_GRACE_S (FAILED_STOP_GRACE_S once it failed)."""
        with self._lock:
            self._stopping.set()
        grace = FAILED_STOP_GRACE_S if self.failure is not None else STOP_GRACE_S
        if self.process is None or self.process.poll() is not None:
            return
        for sig, wait_s in ((signal.SIGTERM, grace), (signal.SIGKILL, 10.0)):
            try:
                os.killpg(self.process.pid, sig)
            except ProcessLookupError:
                return
            try:
                self.process.wait(timeout=wait_s)
                return
            except subprocess.TimeoutExpired:
                continue


def _on_cpu(config: DictConfig) -> bool:
    """True when the run trains on the CPU (the vllm-cpu build serves the judge there too)."""
    return str(config.trainer.get("device", "cuda")) == "cpu"


class _JudgeFailed(KeyboardInterrupt):
    """Raised in the launcher's main thread when the judge's server failed.

    A KeyboardInterrupt because Ray's blocking `ray.get` lets only that (and SystemExit) out of a signal
    handler, as a plain KeyboardInterrupt: `serve_judge` then raises the failure the server recorded.
    """


@contextmanager
def serve_judge(
    config: DictConfig, judge: JudgeSettings, give_up: Callable[[JudgeServerError], None] | None = None
) -> Iterator[JudgeServer | None]:
    """For the `vllm` backend: start the judge's server at the run plan's `medplay.judge.url`, stop it afterwards.

    The server starts at the same time as Ray and the trainer's workers: this returns at once, daemon
    threads watch it (`JudgeServer.supervise`), and the agent loops wait for it only before their first
    judged game (`judge_factory.selfplay_judge`). When it fails, at any moment, the main thread is
    interrupted and leaves this block with the JudgeServerError; if it has not left it GIVE_UP_AFTER_S
    later (a blocking call that ignores the interrupt), the server is killed and `give_up` ends the run.
    """
    if not judge.kind.served_here:
        yield None
        return
    model = Path(judge.model or "")
    port = urlsplit(judge.url or "").port
    if port is None:
        raise RuntimeError(f"medplay.judge.url {judge.url!r} names no port: the run plan sets it (run_plan.py)")
    server = JudgeServer(
        vllm_command(model, port, judge.serve, on_cpu=_on_cpu(config)),
        port,
        Path(config.medplay.output_dir) / LOG_NAME,
        judge.serve.startup_timeout_s,
        judge_server_cache_environment(cache_dir(config.medplay.get("cache_dir"))),
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
