"""The `vllm` judge backend: a vLLM OpenAI-compatible server that `medplay train` starts, watches and stops.

One job: start `python -m vllm.entrypoints.openai.api_server` for `medplay.judge.model` on loopback,
wait until it answers `/v1/models`, stop it (process group: TERM, then KILL) when training ends or
the launcher gets a signal, and say clearly when it dies. The agent loops reach it through the
OpenAI-compatible judge client (`medical_team.judge.openai_backend`). Why not verl's
`reward.reward_model` servers: docs/judge.md, "The served judge".
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

import httpx
from omegaconf import DictConfig, open_dict

from medical_team.cache_folder import cache_dir, judge_server_cache_environment
from medical_team.console import say
from medical_team.errors import UserInputError
from medical_team.judge.settings import JudgeSettings, ServeSettings
from medical_team.verl_ext.startup import stage

LOG_NAME = "judge-server.log"
STAGE = "judge server"  # its name on the console's startup lines
STOP_GRACE_S = 30.0
_PR_SET_PDEATHSIG = 1


class JudgeServerError(RuntimeError):
    """The judge's vLLM server did not start or answer in time."""


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
        "to a local folder; alternatives: medplay.judge.backend=openai with medplay.judge.base_url (a remote "
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


def vllm_command(model: Path, port: int, serve: ServeSettings, *, on_cpu: bool) -> list[str]:
    """The vLLM OpenAI server's command line: the KV cache in bytes, and on a GPU the share vLLM checks is free."""
    command = [
        sys.executable, "-m", "vllm.entrypoints.openai.api_server",
        "--model", str(model), "--served-model-name", str(model),
        "--host", "127.0.0.1", "--port", str(port),
        "--dtype", "float32" if on_cpu and serve.dtype == "auto" else serve.dtype,
        "--max-num-seqs", str(serve.max_num_seqs),
        "--disable-log-stats",
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


def answers(base_url: str) -> bool:
    """Whether an OpenAI-compatible server answers `GET {base_url}/models` with 200."""
    try:
        return httpx.get(f"{base_url}/models", timeout=5).status_code == 200
    except httpx.HTTPError:
        return False


def wait_until_served(base_url: str, timeout_s: float, poll_s: float = 1.0) -> None:
    """Block until the judge's server answers; JudgeServerError after `timeout_s` (the launcher stops a dead one)."""
    deadline = time.monotonic() + timeout_s
    while not answers(base_url):
        if time.monotonic() > deadline:
            raise JudgeServerError(
                f"the judge's vLLM server at {base_url} did not answer within {timeout_s:.0f} s "
                "(medplay.judge.serve.startup_timeout_s)"
            )
        time.sleep(poll_s)


class JudgeServer:
    """One vLLM OpenAI server process of the judge model, in its own process group."""

    def __init__(
        self,
        command: list[str],
        port: int,
        log_file: Path,
        startup_timeout_s: float,
        environment: Mapping[str, str] | None = None,
    ) -> None:
        self.command = command
        self.environment = dict(environment or {})  # set over this process's own for the server
        self.base_url = f"http://127.0.0.1:{port}/v1"
        self.log_file = log_file
        self.startup_timeout_s = startup_timeout_s
        self.process: subprocess.Popen[bytes] | None = None
        self._stopping = threading.Event()

    def launch(self) -> None:
        """Start the server's process and return at once."""
        self.log_file.parent.mkdir(parents=True, exist_ok=True)
        env = {key: value for key, value in os.environ.items() if not (key == "VLLM_CPU_KVCACHE_SPACE" and not value)}
        env.update(self.environment)
        with open(self.log_file, "ab") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-c", _EXEC_WITH_PARENT_DEATH_SIGNAL, *self.command],
                stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True,
            )  # fmt: skip

    def start(self) -> None:
        """Start the server and return once it answers; raise JudgeServerError (with its log's end) otherwise."""
        self.launch()
        self.await_ready()

    def await_ready(self) -> None:
        """Return once the launched server answers (then watch it); raise JudgeServerError otherwise."""
        self._wait_ready()
        threading.Thread(target=self._watch, name="judge-server-watch", daemon=True).start()

    def _wait_ready(self) -> None:
        """Poll `/v1/models` until it answers 200, the process exits, or the startup timeout passes."""
        assert self.process is not None
        deadline = time.monotonic() + self.startup_timeout_s
        while True:
            code = self.process.poll()
            if code is not None:
                raise JudgeServerError(
                    f"the judge's vLLM server exited with status {code} while starting; {self._tail()}"
                )
            if answers(self.base_url):
                return
            if time.monotonic() > deadline:
                self.stop()
                raise JudgeServerError(
                    f"the judge's vLLM server did not answer within {self.startup_timeout_s:.0f} s "
                    f"(medplay.judge.serve.startup_timeout_s); {self._tail()}"
                )
            time.sleep(1.0)

    def _watch(self) -> None:
        """Say once, on stderr, when the server dies during training (its games then become ties)."""
        assert self.process is not None
        code = self.process.wait()
        if not self._stopping.is_set():
            say(f"medplay: the judge's vLLM server exited with status {code} during training; {self._tail()}", err=True)

    def _tail(self, lines: int = 1) -> str:
        """Where its log is, with the log's last non-empty line."""
        try:
            text = [line for line in self.log_file.read_text(errors="replace").splitlines() if line.strip()]
        except OSError:
            text = []
        last = f": {text[-lines].strip()[:300]}" if text else ""
        return f"its log: {self.log_file}{last}"

    def stop(self) -> None:
        """TERM the server's process group, KILL it after STOP_GRACE_S."""
        self._stopping.set()
        if self.process is None or self.process.poll() is not None:
            return
        for sig, wait_s in ((signal.SIGTERM, STOP_GRACE_S), (signal.SIGKILL, 10.0)):
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


class _JudgeFailed(BaseException):
    """Raised in the launcher's main thread when the judge's server failed while the trainer was starting."""


@contextmanager
def serve_judge(config: DictConfig, judge: JudgeSettings) -> Iterator[JudgeServer | None]:
    """For the `vllm` backend: start the judge's server, point `medplay.judge.base_url` at it, stop it afterwards.

    The server starts at the same time as Ray and the trainer's workers: this returns at once, a thread
    says when it is ready, and the agent loops wait for it only before their first judged game
    (`judge_factory.selfplay_judge`). If it dies or does not answer in time while the run goes on, the
    thread signals the launcher's main thread, which then ends the run with that JudgeServerError.
    """
    if judge.backend != "vllm":
        yield None
        return
    model = resolve_judge_model(judge.model or "")
    port = judge.serve.port or free_port()
    server = JudgeServer(
        vllm_command(model, port, judge.serve, on_cpu=_on_cpu(config)),
        port,
        Path(config.medplay.output_dir) / LOG_NAME,
        judge.serve.startup_timeout_s,
        judge_server_cache_environment(cache_dir(config.medplay.get("cache_dir"))),
    )
    failure: list[JudgeServerError] = []

    def fail_main_thread(_signum: int, _frame: object) -> None:
        raise _JudgeFailed

    def await_ready() -> None:
        try:
            with stage(STAGE, f"vLLM for {model} on {server.base_url} (log: {server.log_file})"):
                server.await_ready()
        except JudgeServerError as error:
            failure.append(error)
            os.kill(os.getpid(), signal.SIGUSR1)

    previous = signal.signal(signal.SIGUSR1, fail_main_thread)
    try:
        server.launch()
        threading.Thread(target=await_ready, name="judge-server-start", daemon=True).start()
        with open_dict(config):
            config.medplay.judge.base_url = server.base_url
            config.medplay.judge.model = str(model)
        yield server
    except _JudgeFailed:
        raise failure[0] from None
    finally:
        signal.signal(signal.SIGUSR1, previous)
        server.stop()
