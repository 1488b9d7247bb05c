"""One run per output folder (medical_team/run_folder/run_lock.py), with real processes holding and asking for the lock.

A second `medplay train`, `medplay sft` or appliance pipeline (entrypoints/pipeline.sh) on a folder whose lock a
live process holds exits 2 with one line naming the folder and the holder's pid, and changes nothing in the folder;
the pipeline's train step adopts the lock its shell holds; a holder killed with SIGKILL, whose forked and exec'd
children live on, leaves the folder free at once. A pipeline refused before its first write to the volume leaves it
as it found it (the lock file it created removed, one that was there kept), and a run that opened the lock file
before such a pipeline removed it opens it again.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psutil
import pytest
from omegaconf import OmegaConf
from processes import stop_session

from medical_team.launcher.launch import locked_folders
from medical_team.reliability.stop_request import STOP_FILE
from medical_team.run_folder import run_lock
from medical_team.run_folder.run_lock import (
    INHERITED_FD_ENV,
    LOCK_NAME,
    REPLACED_EXIT,
    hold_run_lock,
    lock_holder,
    release_run_lock,
)

REPO = Path(__file__).resolve().parents[2]
PIPELINE = REPO / "entrypoints" / "pipeline.sh"
MEDPLAY = str(Path(sys.executable).with_name("medplay"))
OLD_MTIME_NS = 1_600_000_000 * 10**9  # a fixed past time: any write to a file or folder moves it
# Takes the lock on argv[1] (twice: the second call, in the holding process, does nothing), optionally starts a
# forked and an exec'd child that outlive it, says `ready` and holds the lock until its stdin closes.
HOLDER = """
import os, subprocess, sys, time
from pathlib import Path
from medical_team.run_folder.run_lock import hold_run_lock
folder = Path(sys.argv[1])
hold_run_lock(folder)
hold_run_lock(folder)
if sys.argv[2:] == ["children"]:
    read_end, write_end = os.pipe()
    if os.fork() == 0:  # a worker forked without exec, as multiprocessing's and data loaders' are
        os.write(write_end, b"forked")  # its copy of the lock's descriptor was closed before fork() returned
        time.sleep(600)
    os.read(read_end, 6)
    subprocess.Popen(["sleep", "600"], close_fds=False)
print("ready", flush=True)
sys.stdin.read()
"""
# The pipeline's lines (entrypoints/pipeline.sh): the shell opens the lock file of folder $1 and holds the lock.
SHELL_HOLDS = (
    'exec {fd}<>"$1/$(python -m medical_team.run_folder.run_lock name)"\npython -m medical_team.run_folder.run_lock take "$1" "$fd" $$\n'
)
REMEDY = "; wait for it to end, stop it, or use another output folder"
ACQUIRE = "import sys\nfrom pathlib import Path\nfrom medical_team.run_folder.run_lock import hold_run_lock\n"
ACQUIRE += "hold_run_lock(Path(sys.argv[1]))\nprint('locked', flush=True)\n"


@contextmanager
def holder(folder: Path, *extra: str) -> Iterator[subprocess.Popen[str]]:
    """A process holding `folder`'s lock, returned once it said `ready`; released when the block ends."""
    process = subprocess.Popen([sys.executable, "-c", HOLDER, str(folder), *extra], stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, text=True, start_new_session=True)  # fmt: skip
    assert process.stdout is not None and process.stdin is not None
    said = []
    try:
        while (line := process.stdout.readline()) and line != "ready\n":
            said.append(line)
        assert line == "ready\n", f"the holder ended before it was ready: {said}"
        yield process
    finally:
        process.stdin.close()
        stop_session(process.pid, grace_s=5)
        process.wait(timeout=30)


def acquire(folder: Path) -> subprocess.CompletedProcess[str]:
    """A fresh process asking for the lock of `folder` and exiting (which releases it)."""
    command = [sys.executable, "-c", ACQUIRE, str(folder)]
    return subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)


def used_folder(folder: Path) -> Path:
    """An output folder a run has used: a stop request, metrics, logs, the judge's log; every time in the past."""
    for name, text in (
        (f"checkpoints/{STOP_FILE}", "SIGTERM\n"),
        ("checkpoints/metrics.jsonl", '{"step": 1}\n'),
        ("logs/train-20250101T000000Z.log", "old run\n"),
        ("judge-server.log", "old judge\n"),
        ("sft/metrics.jsonl", '{"step": 1}\n'),
    ):
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)
    return folder


def snapshot(folder: Path) -> dict[str, tuple[int, int]]:
    """Every file and folder under `folder` (itself included), with its size and mtime."""
    return {str(path.relative_to(folder)): (path.stat().st_size, path.stat().st_mtime_ns)
            for path in [folder, *folder.rglob("*")]}  # fmt: skip


def date_back(folder: Path) -> None:
    """Set every mtime under `folder` to OLD_MTIME_NS, deepest first."""
    for path in sorted([folder, *folder.rglob("*")], key=lambda p: len(p.parts), reverse=True):
        os.utime(path, ns=(OLD_MTIME_NS, OLD_MTIME_NS))


def venv_first() -> dict[str, str]:
    """This environment with the virtualenv's `python` and `medplay` first on PATH, as in the image."""
    return {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}


def held_line(folder: Path, pid: int) -> str:
    """What a refused run says of the folder and its holder."""
    return f"{folder}: in use by another medplay run (pid {pid} on host {socket.gethostname()}; lock: {LOCK_NAME})"


def pipeline_env(tmp_path: Path, folder: Path) -> dict[str, str]:
    """The appliance's variables for a pipeline on `folder` as its checkpoints volume, its other folders in `tmp_path`."""
    run_dir = tmp_path / "run"
    run_dir.mkdir(exist_ok=True)
    return {
        **venv_first(),
        "MEDPLAY_HOME": str(REPO),
        "MEDPLAY_CHECKPOINTS": str(folder),
        "MEDPLAY_LOGS": str(tmp_path / "logs"),
        "MEDPLAY_RUN_DIR": str(run_dir),
        "MEDPLAY_DATA": str(tmp_path / "data"),
        "MEDPLAY_RUN_CONFIG": str(tmp_path / "run.yaml"),
    }


@pytest.mark.slow
@pytest.mark.parametrize("command", ["train", "sft"])
def test_a_second_run_on_a_held_folder_exits_2_naming_the_holder_and_changes_nothing(
    tmp_path: Path, command: str
) -> None:
    folder = used_folder(tmp_path / "run")
    with holder(folder) as holding:
        date_back(folder)
        before = snapshot(folder)
        second = subprocess.run(
            [MEDPLAY, command, "profile=cpu-smoke", f"medplay.output_dir={folder}"],
            capture_output=True, text=True, timeout=300, check=False, cwd=tmp_path,
        )  # fmt: skip
        assert second.returncode == 2, second.stderr[-3000:]
        assert second.stderr.splitlines() == [f"medplay {command}: error: {held_line(folder, holding.pid)}{REMEDY}"]
        # Refused before the stop request was cleared, a log opened, the judge or Ray started.
        assert snapshot(folder) == before
        # Nothing else said (train echoes its overrides first): no stage began.
        assert set(second.stdout.splitlines()) <= {f"medplay {command}: profile=cpu-smoke medplay.output_dir={folder}"}


def test_the_appliance_pipeline_refuses_a_held_checkpoints_volume_before_its_first_step(tmp_path: Path) -> None:
    folder = used_folder(tmp_path / "checkpoints")
    env = pipeline_env(tmp_path, folder)
    run_dir, logs = Path(env["MEDPLAY_RUN_DIR"]), Path(env["MEDPLAY_LOGS"])
    with holder(folder) as holding:
        date_back(folder)
        before = snapshot(folder)
        pipeline = subprocess.run(["bash", str(PIPELINE)], env=env, capture_output=True, text=True, timeout=120,
                                  check=False)  # fmt: skip
        assert pipeline.returncode == 2, pipeline.stdout + pipeline.stderr
        assert (run_dir / "pipeline.status").read_text() == "2\n"
        refusals = [line for line in pipeline.stdout.splitlines() if "in use" in line]
        assert len(refusals) == 1 and refusals[0].endswith(
            f" pipeline: error: {held_line(folder, holding.pid)}{REMEDY}"
        )
        assert not any((logs / "pipeline").iterdir())  # no step ran
        assert snapshot(folder) == before


@pytest.mark.slow
def test_a_pipeline_the_probe_refuses_leaves_an_empty_volume_empty(tmp_path: Path) -> None:
    folder = tmp_path / "checkpoints"
    folder.mkdir()
    env = pipeline_env(tmp_path, folder)
    (tmp_path / "run" / "train.args").write_text("profile=80g\n")  # `train profile=80g` on a host without a GPU

    pipeline = subprocess.run(["bash", str(PIPELINE)], env=env, capture_output=True, text=True, timeout=300,
                              check=False)  # fmt: skip

    assert pipeline.returncode == 3, pipeline.stdout[-5000:] + pipeline.stderr[-3000:]
    assert "step probe failed with exit status 3" in pipeline.stdout
    assert sorted(folder.iterdir()) == []
    assert json.loads((tmp_path / "logs" / "probe.json").read_text())["ok"] is False  # the refusal's record


def test_a_pipeline_refused_before_its_first_write_keeps_a_lock_file_that_was_there(tmp_path: Path) -> None:
    folder = tmp_path / "checkpoints"
    folder.mkdir()
    env = pipeline_env(tmp_path, folder)
    (tmp_path / "run.yaml").write_text('medplay: {judge: {url: "a\\nb"}}\n')  # refused before the probe
    (folder / LOCK_NAME).write_text('{"pid": 1, "host": "an earlier run"}\n')

    pipeline = subprocess.run(["bash", str(PIPELINE)], env=env, capture_output=True, text=True, timeout=120,
                              check=False)  # fmt: skip

    assert pipeline.returncode == 2, pipeline.stdout[-5000:] + pipeline.stderr[-3000:]
    assert "field 'medplay.judge.url': a value of one line is expected" in pipeline.stdout
    assert sorted(path.name for path in folder.iterdir()) == [LOCK_NAME]
    # The folder was taken, then given back: the next run takes it.
    assert acquire(folder).stdout == "locked\n"


def test_a_lock_file_removed_after_a_shells_open_is_opened_again(tmp_path: Path) -> None:
    folder = tmp_path / "checkpoints"
    folder.mkdir()
    # Two opens of the lock file in one shell, two runs: `a` holds it, `b` opened it, `a` ends before writing.
    script = (
        'exec {a}<>"$1/$(python -m medical_team.run_folder.run_lock name)"\n'
        'python -m medical_team.run_folder.run_lock take "$1" "$a" $$\n'
        'exec {b}<>"$1/$(python -m medical_team.run_folder.run_lock name)"\n'
        'python -m medical_team.run_folder.run_lock drop "$1" "$b" || echo "drop by b: $?"\n'
        'python -m medical_team.run_folder.run_lock drop "$1" "$a" && echo "dropped by a"\n'
        "exec {a}>&-\n"
        'python -m medical_team.run_folder.run_lock take "$1" "$b" $$ || echo "take by b: $?"\n'
    )
    command = ["bash", "-c", script, "pipeline", str(folder)]
    shell = subprocess.run(command, env=venv_first(), capture_output=True, text=True, timeout=120, check=True)

    assert shell.stdout.splitlines() == ["drop by b: 1", "dropped by a", f"take by b: {REPLACED_EXIT}"], shell.stderr
    assert "removed by a run that ended before writing, after this run opened it; start the run again" in shell.stderr
    assert not (folder / LOCK_NAME).exists()  # `b` locked a file no longer in the folder, and let it go


def test_a_run_whose_lock_file_went_between_its_open_and_its_lock_holds_the_new_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_try_lock = run_lock._try_lock
    removed = []

    def removed_first(fd: int, path: Path) -> bool:
        if not removed:  # a pipeline that ended before writing removes the file this run has just opened
            removed.append(path)
            path.unlink()
        return real_try_lock(fd, path)

    monkeypatch.setattr(run_lock, "_try_lock", removed_first)
    hold_run_lock(tmp_path)
    try:
        assert removed == [tmp_path / LOCK_NAME]
        assert lock_holder(tmp_path) == os.getpid()  # recorded in the file now in the folder
        refused = acquire(tmp_path)
        assert refused.returncode == 1 and held_line(tmp_path, os.getpid()) in refused.stderr
    finally:
        release_run_lock(tmp_path)


def test_a_child_of_the_shell_holding_the_lock_adopts_it_others_are_refused(tmp_path: Path) -> None:
    folder = tmp_path / "checkpoints"
    folder.mkdir()
    # A process without the descriptor, or with the variable naming another descriptor, is refused meanwhile.
    script = (
        f'echo "shell $$"\n{SHELL_HOLDS}'
        f'{INHERITED_FD_ENV}="$fd" python -c "$2" "$1"\n'
        'python -c "$2" "$1" 2>/dev/null || echo "refused: $?"\n'
        f'{INHERITED_FD_ENV}=0 python -c "$2" "$1" || echo "refused: $?"\n'
    )
    command = ["bash", "-c", script, "pipeline", str(folder), ACQUIRE]
    shell = subprocess.run(command, env=venv_first(), capture_output=True, text=True, timeout=120, check=True)
    said = shell.stdout.splitlines()
    assert said[1:] == ["locked", "refused: 1", "refused: 1"], shell.stderr[-3000:]
    assert held_line(folder, int(said[0].removeprefix("shell "))) in shell.stderr
    assert acquire(folder).stdout == "locked\n"  # the shell has ended


@pytest.mark.slow
def test_the_pipelines_train_step_adopts_the_lock_its_shell_holds(tmp_path: Path) -> None:
    folder = tmp_path / "checkpoints"
    folder.mkdir()
    # The appliance's folders: one for the output and the checkpoints; no data, so that it ends past the lock.
    train = f'{INHERITED_FD_ENV}="$fd" medplay train profile=cpu-smoke medplay.output_dir="$1" '
    train += 'trainer.default_local_dir="$1" medplay.data_dir="$1/none"\n'
    command = ["bash", "-c", SHELL_HOLDS + train, "pipeline", str(folder)]
    shell = subprocess.run(command, env=venv_first(), capture_output=True, text=True, timeout=300, check=False)
    assert shell.returncode == 2
    assert shell.stderr.splitlines()[-1].startswith(f"medplay train: error: {folder}/none/train.parquet: ")


def test_a_killed_holder_leaves_the_folder_free_though_its_children_live_on(tmp_path: Path) -> None:
    folder = tmp_path / "run"
    with holder(folder, "children") as holding:
        assert acquire(folder).returncode == 1
        children = psutil.Process(holding.pid).children()
        assert len(children) == 2  # one forked, one exec'd

        holding.send_signal(signal.SIGKILL)
        holding.wait(timeout=30)
        again = acquire(folder)

        assert again.returncode == 0, again.stderr[-3000:]
        assert again.stdout == "locked\n"
        assert all(child.is_running() for child in children)


def test_a_checkpoint_folder_outside_the_output_folder_is_locked_too(tmp_path: Path) -> None:
    def folders(checkpoints: Path) -> list[Path]:
        config = {"medplay": {"output_dir": str(tmp_path / "out")}, "trainer": {"default_local_dir": str(checkpoints)}}
        return locked_folders(OmegaConf.create(config))

    assert folders(tmp_path / "out" / "checkpoints") == [tmp_path / "out"]
    assert folders(tmp_path / "out") == [tmp_path / "out"]  # the appliance's: one folder for both
    assert folders(tmp_path / "elsewhere") == [tmp_path / "out", tmp_path / "elsewhere"]


def test_a_run_that_returns_leaves_the_folder_free_for_the_next(tmp_path: Path) -> None:
    hold_run_lock(tmp_path)  # as `medplay train` does in this process: tests and scripts call it in-process
    try:
        refused = acquire(tmp_path)
        assert refused.returncode != 0 and "in use by another medplay run" in refused.stderr
    finally:
        release_run_lock(tmp_path)
    assert acquire(tmp_path).returncode == 0
    release_run_lock(tmp_path)  # a folder this process does not hold: nothing to do


def test_the_lock_names_its_holder_to_the_run_on_this_host_only(tmp_path: Path) -> None:
    assert lock_holder(tmp_path) is None  # no lock file yet
    hold_run_lock(tmp_path)
    try:
        assert lock_holder(tmp_path) == os.getpid()
    finally:
        release_run_lock(tmp_path)
    (tmp_path / LOCK_NAME).write_text(json.dumps({"pid": os.getpid(), "host": f"{socket.gethostname()}-other"}))
    assert lock_holder(tmp_path) is None  # a pid of another host names no process here
