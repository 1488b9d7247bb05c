"""What a stall leaves for a person to act on: `<medplay.output_dir>/hangs/<UTC time>/`.

- `stall.json`: the phase, the step, its seconds and limit, the attempt, where the stacks are;
- `stacks/<pid>-<part>.txt`: the Python stacks of every thread of each process of the run (py-spy, `--nonblocking`
  so that a stopped or spinning process is read as it is), or why they could not be read, with each thread's kernel
  wait channel (`/proc/PID/task/TID/wchan`) for every process;
- `processes.txt`: the process tree: each process's part, state, CPU seconds, RSS and command line;
- `progress.json`: the run's progress record as the watchdog read it; `log-tail.txt`: the run log's last lines;
- `gpu.txt`: `nvidia-smi`'s view where there is one.

Every external call has its own timeout and they run side by side, so the record is written within
`DUMP_TIMEOUT_S` plus a few seconds whatever state the run is in.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path

import psutil

from medical_team.run.processes import process_kind
from medical_team.run.progress_record import Progress
from medical_team.run.watchdog_files import HANGS_FOLDER

DUMP_TIMEOUT_S = 30.0  # one process's stacks
LOG_TAIL_LINES = 200


@dataclass(frozen=True)
class Stall:
    """A phase that outlasted its limit."""

    phase: str
    step: int
    seconds: float
    limit_s: float
    attempt: int

    def sentence(self, record: Path | None = None) -> str:
        """One sentence: where the run stopped, and where its record is."""
        where = f"; the stacks of every process: {record}" if record else ""
        return (
            f"step {self.step} stalled in {self.phase} for {self.seconds:.0f} s (limit {self.limit_s:.0f} s, "
            f"attempt {self.attempt}){where}"
        )


def hang_folder(output_dir: Path, when: float) -> Path:
    """A new folder for the record of a stall seen at `when`."""
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(when))
    folder, n = output_dir / HANGS_FOLDER / stamp, 1
    while folder.exists():
        n += 1
        folder = output_dir / HANGS_FOLDER / f"{stamp}-{n}"
    return folder


def write_hang_record(
    folder: Path, stall: Stall, progress: Progress, processes: list[psutil.Process], log_file: Path | None
) -> Path:
    """Write the record of `stall` for `processes` into `folder`; return `folder`."""
    stacks = folder / "stacks"
    stacks.mkdir(parents=True, exist_ok=True)
    rows = [_describe(process) for process in processes]
    with ThreadPoolExecutor(max_workers=max(1, len(rows))) as pool:
        read = list(pool.map(lambda row: _write_stacks(stacks, row), rows))
    (folder / "processes.txt").write_text("\n".join(_row_line(row) for row in rows) + "\n", encoding="utf-8")
    (folder / "progress.json").write_text(json.dumps(asdict(progress), indent=1), encoding="utf-8")
    if log_file is not None and log_file.is_file():
        (folder / "log-tail.txt").write_text(_tail(log_file, LOG_TAIL_LINES), encoding="utf-8")
    gpu = _gpu_state()
    if gpu is not None:
        (folder / "gpu.txt").write_text(gpu, encoding="utf-8")
    summary = {
        **asdict(stall),
        "processes": len(rows),
        "python_stacks_read": sum(read),
        "stacks": str(stacks),
        "log": None if log_file is None else str(log_file),
        "written": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    (folder / "stall.json").write_text(json.dumps(summary, indent=1) + "\n", encoding="utf-8")
    return folder


def _describe(process: psutil.Process) -> dict[str, object]:
    """What the tree shows of one process (what could not be read left empty)."""
    row: dict[str, object] = {"pid": process.pid, "ppid": "", "kind": "gone", "state": "", "cpu_s": "", "rss_mib": ""}
    with contextlib.suppress(psutil.Error), process.oneshot():
        cmdline = process.cmdline()
        cpu = process.cpu_times()
        row.update(
            ppid=process.ppid(),
            kind=process_kind(cmdline),
            state=process.status(),
            cpu_s=round(cpu.user + cpu.system, 2),
            rss_mib=round(process.memory_info().rss / 2**20, 1),
            cmdline=" ".join(cmdline)[:300],
        )
    return row


def _row_line(row: dict[str, object]) -> str:
    return "{pid:>7} {ppid:>7} {kind:<24} {state:<10} cpu {cpu_s:>9} s rss {rss_mib:>8} MiB  {cmd}".format(
        cmd=row.get("cmdline", ""), **row
    )


def _write_stacks(folder: Path, row: dict[str, object]) -> bool:
    """One process's stacks into `folder`; True when its Python stacks were read."""
    pid = int(str(row["pid"]))
    text, ok = _python_stacks(pid)
    text += "\n--- kernel wait channel of each thread (/proc/PID/task/TID/wchan) ---\n" + _wait_channels(pid)
    (folder / f"{pid}-{row['kind']}.txt".replace("/", "_")).write_text(text, encoding="utf-8")
    return ok


def _python_stacks(pid: int) -> tuple[str, bool]:
    """py-spy's dump of every thread of `pid` (without pausing it), or why there is none."""
    spy = shutil.which("py-spy") or str(Path(sys.executable).with_name("py-spy"))
    try:
        done = subprocess.run(
            [spy, "dump", "--nonblocking", "--pid", str(pid)],
            capture_output=True,
            text=True,
            timeout=DUMP_TIMEOUT_S,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return f"py-spy did not answer within {DUMP_TIMEOUT_S:.0f} s\n", False
    except OSError as error:
        return f"py-spy could not run: {error}\n", False
    if done.returncode != 0:
        return f"no Python stacks (py-spy exit {done.returncode}): {done.stderr.strip()[-500:]}\n", False
    return done.stdout, True


def _wait_channels(pid: int) -> str:
    lines = []
    for task in sorted(Path(f"/proc/{pid}/task").glob("*"), key=lambda path: int(path.name)):
        with contextlib.suppress(OSError):
            name = (task / "comm").read_text().strip()
            lines.append(f"{task.name} {name}: {(task / 'wchan').read_text().strip() or '-'}")
    return "\n".join(lines) + "\n"


def _tail(path: Path, lines: int) -> str:
    """The last `lines` lines of a file (read from its last MiB)."""
    with path.open("rb") as file:
        file.seek(max(0, path.stat().st_size - 2**20))
        return "\n".join(file.read().decode(errors="replace").splitlines()[-lines:]) + "\n"


def _gpu_state() -> str | None:
    """`nvidia-smi`'s report, None where there is no nvidia-smi."""
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return None
    try:
        return subprocess.run([smi], capture_output=True, text=True, timeout=15, check=False).stdout
    except (subprocess.TimeoutExpired, OSError) as error:
        return f"nvidia-smi did not answer: {error}\n"
