"""A run's TensorBoard events on a checkpoints volume, and waiting until a TensorBoard server shows them."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import httpx

RUN, TAG, STEPS = "medplay-run", "assessor/accuracy", [1, 2, 3]


def write_events(checkpoints: Path) -> None:
    """What verl's TensorBoard logger writes (TENSORBOARD_DIR = <medplay.output_dir>/tensorboard): one scalar, 3 steps."""
    from torch.utils.tensorboard import SummaryWriter

    with SummaryWriter(str(checkpoints / "tensorboard" / RUN)) as writer:
        for step in STEPS:
            writer.add_scalar(TAG, 0.5 + step / 10, step)


def wait_until_shown(port: int, serving: Callable[[], bool], timeout_s: float = 180) -> None:
    """Poll the server's scalars until it shows every step (it reads event files after it starts serving);
    fail when `serving()` turns false or after `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    steps: list[int] = []
    while steps != STEPS:
        assert serving() and time.monotonic() < deadline, f"TensorBoard shows {steps}"
        time.sleep(0.5)
        try:
            answer = httpx.get(
                f"http://127.0.0.1:{port}/data/plugin/scalars/scalars", params={"run": RUN, "tag": TAG}, timeout=2
            )
        except httpx.TransportError:
            continue
        if answer.status_code == 200:
            steps = [point[1] for point in answer.json()]
