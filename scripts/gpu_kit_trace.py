"""The GPU kit's memory and process traces, sampled while a phase trains.

Memory every 0.5 s (nvidia-smi on a GPU, the process tree's resident memory on the CPU), and every 5 s each part of
the run (medical_team/run/processes.py) with its RSS, open files and threads.
"""

from __future__ import annotations

import subprocess
import threading
import time
from pathlib import Path
from typing import Self

import psutil

from medical_team.run.processes import sample_processes

PROCESS_SAMPLE_S = 5.0  # each process's RSS, files and threads: coarser than the memory trace (psutil reads /proc)


class MemoryTrace:
    """Samples memory every 0.5 s into a CSV: nvidia-smi's used MiB on a GPU, else the run's process tree RSS; and
    each part of the run every 5 s into `processes` (time, run, part, processes, RSS MiB, open files, threads)."""

    def __init__(self, path: Path, cpu: bool, processes: Path) -> None:
        self.path, self.cpu, self.processes = path, cpu, processes
        self.peak_mib = 0.0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._parts_thread: threading.Thread | None = None
        self._smi: subprocess.Popen[bytes] | None = None
        self.watched: psutil.Process | None = None
        self.run_name = ""

    def __enter__(self) -> Self:
        self._parts_thread = threading.Thread(target=self._sample_parts, daemon=True)
        self._parts_thread.start()
        if self.cpu:
            self._thread = threading.Thread(target=self._sample_tree, daemon=True)
            self._thread.start()
        else:
            with open(self.path, "ab") as sink:
                self._smi = subprocess.Popen(
                    ["nvidia-smi", "--query-gpu=timestamp,memory.used,memory.total,utilization.gpu",
                     "--format=csv,noheader,nounits", "-lms", "500"],
                    stdout=sink,
                )  # fmt: skip
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        for thread in (self._thread, self._parts_thread):
            if thread is not None:
                thread.join()
        if self._smi is not None:
            self._smi.terminate()
            self._smi.wait()
            for line in self.path.read_text().splitlines():
                fields = [part.strip() for part in line.split(",")]
                if len(fields) >= 3 and fields[1].replace(".", "").isdigit():
                    self.peak_mib = max(self.peak_mib, float(fields[1]))

    def _sample_tree(self) -> None:
        with open(self.path, "a") as sink:
            while not self._stop.wait(0.5):
                if self.watched is None:
                    continue
                total = 0
                try:
                    members = [self.watched, *self.watched.children(recursive=True)]
                except psutil.Error:
                    continue
                for member in members:
                    try:
                        total += member.memory_info().rss
                    except psutil.Error:
                        continue
                mib = total / 2**20
                self.peak_mib = max(self.peak_mib, mib)
                sink.write(f"{time.strftime('%Y/%m/%d %H:%M:%S')}, {mib:.0f}, rss\n")

    def _sample_parts(self) -> None:
        with open(self.processes, "a") as sink:
            sink.write("time,run,part,processes,rss_mib,open_files,threads\n")
            while not self._stop.wait(PROCESS_SAMPLE_S):
                if self.watched is None:
                    continue
                samples = sample_processes([self.watched.pid])
                stamp = time.strftime("%Y/%m/%d %H:%M:%S")
                rows = []
                for kind in sorted({sample.kind for sample in samples}):
                    part = [sample for sample in samples if sample.kind == kind]
                    rss = sum(sample.rss_mib for sample in part)
                    files, threads = sum(sample.open_files for sample in part), sum(sample.threads for sample in part)
                    rows.append(f"{stamp},{self.run_name},{kind},{len(part)},{rss:.1f},{files},{threads}\n")
                sink.writelines(rows)
                sink.flush()
