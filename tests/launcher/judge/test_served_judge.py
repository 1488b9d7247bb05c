"""The served (`vllm`) judge without vLLM: settings, command line, a missing model, supervision, concurrency.

The real vLLM server runs in tests/e2e/test_gpu_kit_cpu.py; here a loopback OpenAI-compatible
endpoint stands in for it to show that agent loops' judge calls overlap, and a small HTTP server
process stands in for the supervised process.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from judge_folders import medgemma_folder, served_judge_run
from models_endpoint import models_server_code
from processes import free_port

from medical_team.agent_loop.judge_factory import judge_executor, selfplay_judge
from medical_team.cli import main
from medical_team.common.errors import UserInputError
from medical_team.common.vocab import Category
from medical_team.data.medec import VALIDATION_CSV, bundled_csv, load_medec
from medical_team.data.seeds import harmful_seed
from medical_team.game import GameConfig, call_judge, judge_request
from medical_team.judge.settings import packaged_judge_settings
from medical_team.judge_server.serving import BackgroundServer
from medical_team.launcher.failures.out_of_memory import out_of_memory
from medical_team.launcher.judge.served_judge_command import vllm_command
from medical_team.launcher.judge.served_judge_plan import resolve_judge_model
from medical_team.launcher.judge.served_judge_process import START_UP, JudgeServer
from medical_team.run.failures import OUT_OF_MEMORY_EXIT, JudgeServerError
from medical_team.run.judge_server_ready import answers, wait_until_served
from medical_team.run.oom_injection import INJECT_ENV, JUDGE_SERVER

GAMES = 16
HANG_GUARD_S = 60  # how long an answer waits for the other calls before it gives up


def test_command_takes_the_kv_cache_in_bytes_beside_a_gpu_share_and_alone_on_cpu() -> None:
    serve = {"gpu_memory_utilization": 0.15, "kv_cache_memory_bytes": 6 << 30}
    gpu = vllm_command(Path("/m"), 9000, packaged_judge_settings(serve=serve).serve, on_cpu=False)
    assert gpu[gpu.index("--kv-cache-memory-bytes") + 1] == str(6 << 30)
    assert gpu[gpu.index("--gpu-memory-utilization") + 1] == "0.15" and "--enforce-eager" not in gpu
    assert gpu[gpu.index("--served-model-name") + 1] == "/m" and gpu[gpu.index("--host") + 1] == "127.0.0.1"
    cpu = vllm_command(
        Path("/m"), 9000, packaged_judge_settings(serve={"kv_cache_memory_bytes": 1 << 26}).serve, on_cpu=True
    )
    assert cpu[cpu.index("--kv-cache-memory-bytes") + 1] == str(1 << 26) and "--gpu-memory-utilization" not in cpu
    assert "--enforce-eager" in cpu and cpu[cpu.index("--dtype") + 1] == "float32"
    assert "--language-model-only" in gpu and "--language-model-only" in cpu


def test_missing_judge_model_names_the_folder_and_the_fix(tmp_path: Path) -> None:
    with pytest.raises(UserInputError) as caught:
        resolve_judge_model(str(tmp_path / "google" / "medgemma-4b-it"))
    message = caught.value.one_line()
    assert message.startswith(f"{tmp_path}/google/medgemma-4b-it: field 'medplay.judge.model': no Hugging Face model")
    assert "hf download google/medgemma-4b-it --local-dir" in message and "medplay.judge.backend=rules" in message


def test_train_stops_before_ray_when_the_judge_model_is_missing(tmp_path: Path, capfd) -> None:
    for name in ("train.parquet", "val.parquet"):
        (tmp_path / name).touch()
    overrides = [f"medplay.data_dir={tmp_path}", f"medplay.output_dir={tmp_path}", "medplay.judge.backend=vllm"]
    overrides.append(f"medplay.judge.model={tmp_path}/j")
    assert main(["train", "profile=cpu-smoke", *overrides]) == 2
    err = capfd.readouterr().err.strip().splitlines()
    assert err[-1].startswith(f"medplay train: error: {tmp_path}/j: field 'medplay.judge.model': no Hugging Face")


def test_rules_runs_are_warned_about(capsys) -> None:
    from medical_team.launcher.judge.judge_run import check_judge

    check_judge(packaged_judge_settings(backend="rules"))
    assert capsys.readouterr().err.startswith("medplay: warning: judge backend is `rules`: no model reads the rewrites")


def test_a_judge_server_without_its_url_is_refused_by_the_run_plan_not_the_settings() -> None:
    from medical_team.launcher.judge.judge_run import check_judge

    settings = packaged_judge_settings(backend="http")  # the container's pipeline sets the URL once its server is up
    with pytest.raises(UserInputError, match="field 'medplay.judge.url': required when judge.backend is http"):
        check_judge(settings)


def test_config_get_shows_the_model_judge_of_gpu_profiles(capsys) -> None:
    assert main(["config", "get", "medplay.judge.backend", "medplay.judge.model", "profile=80g"]) == 0
    assert capsys.readouterr().out.splitlines() == ["vllm", "/models/google/medgemma-4b-it"]
    assert main(["config", "get", "medplay.judge.url", "profile=cpu-smoke", "medplay.judge.backend=http"]) == 0
    assert capsys.readouterr().out == "\n"  # null prints an empty line
    assert main(["config", "get", "medplay.judge.nope", "profile=cpu-smoke"]) == 2
    assert "field 'medplay.judge.nope': no such key" in capsys.readouterr().err


def test_server_process_is_awaited_then_stopped_with_its_group(tmp_path: Path) -> None:
    port = free_port()
    command = [sys.executable, "-c", models_server_code(port, tmp_path)]
    server = JudgeServer(command, port, tmp_path / "log" / "judge-server.log", startup_timeout_s=60)
    server.start()
    assert server.process is not None and server.process.poll() is None
    server.stop()
    assert server.process.poll() is not None


def test_server_goes_when_the_launcher_is_killed(tmp_path: Path) -> None:
    port = free_port()
    launcher_code = (
        "import sys, time\nfrom pathlib import Path\nfrom medical_team.launcher.judge.served_judge_process import JudgeServer\n"
        f"command = [sys.executable, '-c', {models_server_code(port, tmp_path)!r}]\n"
        f"server = JudgeServer(command, {port}, Path('{tmp_path}') / 'judge-server.log', 60)\n"
        "server.start()\nprint(server.process.pid, flush=True)\ntime.sleep(600)\n"
    )
    launcher = subprocess.Popen([sys.executable, "-c", launcher_code], stdout=subprocess.PIPE, text=True)
    server_pid = int(next(line for line in launcher.stdout if not line.startswith("medplay:")))
    launcher.kill()  # SIGKILL: no cleanup code runs in the launcher
    launcher.wait()
    deadline = time.monotonic() + 20
    while _alive(server_pid) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not _alive(server_pid), "the judge server outlived its killed launcher"


def _alive(pid: int) -> bool:
    """True while `pid` runs (a zombie waiting to be reaped counts as gone)."""
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def test_a_server_that_dies_while_starting_is_a_clear_error(tmp_path: Path) -> None:
    command = [sys.executable, "-c", "import sys; print('CUDA out of memory'); sys.exit(3)"]
    server = JudgeServer(command, free_port(), tmp_path / "judge-server.log", startup_timeout_s=60)
    expected = (
        r"^judge start-up: the judge's vLLM server logged a fatal line: CUDA out of memory; turn down .*its log: "
    )
    with pytest.raises(JudgeServerError, match=expected) as caught:
        server.start()
    assert caught.value.exit_status == 4


def test_an_injected_out_of_memory_fails_the_servers_own_process_before_its_command(tmp_path: Path) -> None:
    """MEDPLAY_INJECT_OOM=judge_server: torch's error in the process the launcher starts (medical_team/judge_server/served_judge_exec.py)."""
    ran = tmp_path / "ran"
    command = [sys.executable, "-c", f"open({str(ran)!r}, 'w')"]
    log = tmp_path / "judge-server.log"
    server = JudgeServer(command, free_port(), log, startup_timeout_s=60, environment={INJECT_ENV: JUDGE_SERVER})
    expected = (
        r"^judge start-up: the judge's vLLM server logged a fatal line: torch.OutOfMemoryError: CUDA out of memory"
    )
    with pytest.raises(JudgeServerError, match=expected) as caught:
        server.start()
    assert caught.value.exit_status == OUT_OF_MEMORY_EXIT and not ran.exists()
    found = out_of_memory(caught.value, None, None, None)
    assert found is not None and str(found).startswith(f"out of GPU memory in {START_UP}: CUDA out of memory. Tried")


def test_agent_loop_judge_calls_overlap(tmp_path: Path) -> None:
    """GAMES games ask the judge at once, as agent loops do: the server answers none before all GAMES are in flight."""
    calls = _InFlight()
    server = BackgroundServer(_chat_app_answering_together(calls)).start()
    try:
        settings = packaged_judge_settings(backend="vllm", model="judge", url=f"{server.url}/v1")
        judge = selfplay_judge(settings)
        requests = [judge_request(seed, seed.text + " Extra sentence.", GameConfig()) for seed in _seeds(GAMES)]

        async def all_games() -> None:
            loop = asyncio.get_running_loop()
            await asyncio.gather(
                *(loop.run_in_executor(judge_executor(settings), call_judge, judge, [r]) for r in requests)
            )

        asyncio.run(all_games())
    finally:
        server.stop()
    # Calls made one after another would have left the first waiting out the hang guard with one in flight.
    assert calls.peak == GAMES, f"at most {calls.peak} of {GAMES} judge calls were in flight together"
    assert judge.stats.metrics()["judge/calls"] == GAMES


class _InFlight:
    """The loopback app's requests in flight (its event loop's only), their peak, and the moment all GAMES are in."""

    def __init__(self) -> None:
        self.now = 0
        self.peak = 0
        self.all_in = asyncio.Event()


def _chat_app_answering_together(calls: _InFlight) -> FastAPI:
    """An OpenAI-compatible chat endpoint that holds every answer until GAMES requests are in flight together."""
    app = FastAPI()

    @app.get("/v1/models")
    async def models() -> JSONResponse:  # what the first judged game waits for
        return JSONResponse({"data": [{"id": "judge"}]})

    @app.post("/v1/chat/completions")
    async def complete(request: Request) -> JSONResponse:
        await request.json()
        calls.now += 1
        calls.peak = max(calls.peak, calls.now)
        if calls.now == GAMES:
            calls.all_in.set()
        try:
            await asyncio.wait_for(calls.all_in.wait(), HANG_GUARD_S)
        except TimeoutError:
            pass  # answered anyway: the test then fails on the peak, naming it
        calls.now -= 1
        content = "error_present: yes\nfaithful: yes"
        return JSONResponse({"choices": [{"message": {"role": "assistant", "content": content}}]})

    return app


def _seeds(count: int):
    """Adversarial harmful seeds of the first error notes of the bundled validation file."""
    notes = [note for note in load_medec(bundled_csv(VALIDATION_CSV)).notes if note.error_flag][:count]
    return [dataclasses.replace(harmful_seed(note), category=Category.ADVERSARIAL_HARMFUL) for note in notes]


def test_judge_record_says_which_backend_judged(tmp_path: Path) -> None:
    from omegaconf import OmegaConf

    from medical_team.launcher.judge.judge_run import record_judge

    config = OmegaConf.create({"medplay": {"output_dir": str(tmp_path), "judge": {
        "backend": "rules", "model": None, "url": None}}})  # fmt: skip
    record = json.loads(record_judge(config).read_text())
    assert record["judge/backend"] == "rules" and record["judged_by_model"] is False and "warning" in record


def test_the_judges_server_starts_beside_the_trainer_and_is_awaited_at_the_first_call(tmp_path, monkeypatch, capsys):
    from medical_team.launcher.judge import served_judge, served_judge_plan

    port = free_port()
    go = tmp_path / "go"
    # The stand-in answers once the test creates `go` (without it, it exits after 120 s and the run fails).
    held = (
        f"import pathlib, sys, time; go = pathlib.Path('{go}'); deadline = time.monotonic() + 120\n"
        "while not go.exists() and time.monotonic() < deadline: time.sleep(0.05)\n"
        "if not go.exists(): sys.exit(9)\n"
    ) + models_server_code(port, tmp_path)
    monkeypatch.setattr(served_judge, "vllm_command", lambda *args, **kwargs: [sys.executable, "-c", held])
    monkeypatch.setattr(served_judge_plan, "served_judge_port", lambda: port)
    run = served_judge_run(tmp_path)
    config = run.config
    with served_judge.serve_judge(run) as server:
        # Back while its server cannot answer: not waited for (Ray and the workers start meanwhile).
        assert config.medplay.judge.url == server.url
        assert not server.ready.is_set() and not answers(server.url)
        go.touch()
        wait_until_served(server.url, timeout_s=60)  # what the first judged game does
        assert answers(server.url)
        assert server.ready.wait(60)  # the launcher's thread polls every second, says "ready", then sets it
    out = capsys.readouterr().out
    assert "medplay: judge server: starting vLLM for" in out and "medplay: judge server: ready after" in out


def test_a_judge_server_that_dies_while_the_trainer_starts_ends_the_run(tmp_path, monkeypatch):
    from medical_team.launcher.judge import served_judge

    dying = "import sys, time; time.sleep(1); print('CUDA out of memory'); sys.exit(3)"
    monkeypatch.setattr(served_judge, "vllm_command", lambda *args, **kwargs: [sys.executable, "-c", dying])
    run = served_judge_run(tmp_path)
    expected = r"^judge start-up: the judge's vLLM server logged a fatal line: CUDA out of memory; .*its log: "
    with pytest.raises(JudgeServerError, match=expected), served_judge.serve_judge(run):
        for _ in range(300):  # the trainer starting (Ray, workers) in the launcher's main thread
            time.sleep(0.1)




def test_on_a_gpu_the_judge_server_starts_with_the_plans_kv_bytes_and_its_own_compile_caches(tmp_path, monkeypatch):
    from medical_team.launcher.judge import served_judge, served_judge_plan
    from medical_team.launcher.plan.host_plan import compose_plan
    from medical_team.launcher.plan.run_plan import plan_run

    model = medgemma_folder(tmp_path)
    overrides = [f"medplay.judge.model={model}", f"medplay.output_dir={tmp_path}", f"medplay.cache_dir={tmp_path}/c"]
    # The server's process: the command line it was given, its cache variables, then an answering /v1/models.
    port, commands = free_port(), []
    stand_in = "import os, sys; print('caches', *(os.environ[v] for v in sys.argv[1:4]), flush=True)\n"
    stand_in += models_server_code(port, tmp_path)

    def command(*args, **kwargs) -> list[str]:
        commands.append(vllm_command(*args, **kwargs))
        return [sys.executable, "-c", stand_in, "VLLM_CACHE_ROOT", "TORCHINDUCTOR_CACHE_DIR", "TRITON_CACHE_DIR"]

    monkeypatch.setattr(served_judge, "vllm_command", command)
    monkeypatch.setattr(served_judge_plan, "served_judge_port", lambda: port)
    run = plan_run(["profile=80g", *overrides], total_gib=79.2)  # what `medplay train` does before Ray
    config = run.config
    with served_judge.serve_judge(run) as server:
        wait_until_served(server.url, timeout_s=60)
        log = server.log_file.read_text()

    (started,) = commands
    planned = compose_plan("80g", overrides, 79.2).kv_cache["judge"]["kv_cache_bytes"]
    assert started[started.index("--kv-cache-memory-bytes") + 1] == str(planned)
    assert started[started.index("--gpu-memory-utilization") + 1] == "0.2"
    judge_caches = [str(tmp_path / "c" / "judge-server" / sub) for sub in ("vllm", "torchinductor", "triton")]
    assert f"caches {' '.join(judge_caches)}" in log
    rollout_env = config.ray_kwargs.ray_init.runtime_env.env_vars
    assert rollout_env["VLLM_CACHE_ROOT"] == str(tmp_path / "c" / "vllm") != judge_caches[0]
