"""Floors and forecasts from each step's readings (medical_team/reliability/resource_watch.py)."""

from __future__ import annotations

from pathlib import Path

from medical_team.reliability.resource_watch import (
    Floors,
    Reading,
    Resource,
    ResourceWatch,
    floor_message,
    floor_step_metric,
    size_text,
)
from medical_team.reliability.resources import GIB, MIB, HostMemory

TOTAL = 10_000
MEMORY_STEP = floor_step_metric(Resource.HOST_MEMORY)
DISK_STEP = floor_step_metric(Resource.DISK)


def reading(step: int, available: int, disk_free: int = 10**9) -> Reading:
    """One step's readings on a host of TOTAL bytes."""
    return Reading(step, HostMemory(TOTAL, available), disk_free)


def test_a_floor_is_reached_strictly_below_it() -> None:
    watch = ResourceWatch(Floors(memory_fraction=0.1, disk_bytes=50), trend_steps=3)  # memory floor: 1000 bytes
    assert watch.observe(reading(1, 1000, 50), last_step=10).reached == ()
    assert watch.observe(reading(2, 999, 50), last_step=10).reached == (Resource.HOST_MEMORY,)
    assert watch.observe(reading(3, 1000, 49), last_step=10).reached == (Resource.DISK,)
    assert watch.observe(reading(4, 0, 0), last_step=10).reached == (Resource.HOST_MEMORY, Resource.DISK)
    # a floor of 1 is the whole memory: always reached
    assert ResourceWatch(Floors(1.0, 0), 3).observe(reading(1, TOTAL - 1), 10).reached == (Resource.HOST_MEMORY,)


def test_a_floor_of_0_is_never_reached_nor_forecast() -> None:
    watch = ResourceWatch(Floors(0.0, 0), trend_steps=2)
    for step in range(1, 6):
        verdict = watch.observe(reading(step, 0, 0), last_step=6)
        assert (verdict.metrics, verdict.reached) == ({}, ())


def test_the_forecast_waits_for_the_warm_up_then_fits_the_last_steps() -> None:
    # 100 bytes less each step after a warm-up that fell ten times faster; the floor is 1000 bytes
    available = {1: 9000, 2: 8000, 3: 7000, 4: 4600, 5: 4500, 6: 4400, 7: 4300}

    def forecasts(last_step: int) -> dict[int, dict[str, float]]:
        watch = ResourceWatch(Floors(memory_fraction=0.1, disk_bytes=0), trend_steps=3)
        return {step: watch.observe(reading(step, value), last_step).metrics for step, value in available.items()}

    on_time = forecasts(last_step=40)
    assert [on_time[step] for step in (1, 2, 3, 4, 5)] == [{}] * 5  # fewer than 2 x 3 steps read
    # steps 4-6 (then 5-7): 5000 - 100 x step reaches 1000 at step 40, the last step: forecast
    assert on_time[6] == on_time[7] == {MEMORY_STEP: 40.0}
    assert forecasts(last_step=39)[7] == {}  # the run ends before: nothing to say


def test_a_forecast_between_steps_names_the_first_step_past_the_floor() -> None:
    watch = ResourceWatch(Floors(memory_fraction=0.0, disk_bytes=1050), trend_steps=2)
    for step in (1, 2, 3, 4):
        verdict = watch.observe(reading(step, TOTAL, 5000 - 100 * step), last_step=100)
    assert verdict.metrics == {DISK_STEP: 40.0}  # 5000 - 100 x step = 1050 at step 39.5
    rising = ResourceWatch(Floors(0.0, 1050), 2)
    for step in (1, 2, 3, 4):
        verdict = rising.observe(reading(step, TOTAL, 5000 + step), last_step=100)
    assert verdict.metrics == {}


def test_the_stop_line_names_each_resource_its_reading_the_floor_and_the_checkpoint() -> None:
    floors = Floors(memory_fraction=0.1, disk_bytes=GIB // 50)
    at = Reading(7, HostMemory(24 * GIB, 2 * GIB), 12 * MIB)
    checkpoint = Path("/out/checkpoints/global_step_7")
    largest = {"vllm_worker": 1600.0, "fsdp_worker": 1200.0, "task_runner": 900.0}
    line = floor_message(
        (Resource.HOST_MEMORY, Resource.DISK), at, floors, Path("/out/checkpoints"), checkpoint, largest
    )
    assert line.startswith(
        "step 7: host memory available 2.0 GiB of 24.0 GiB fell below its floor, medplay.resources.host_memory_floor="
        "0.1 (2.4 GiB), set before Ray's memory monitor kills a worker at 95% used; the run's largest parts: "
        "vllm_worker 1.6 GiB, fsdp_worker 1.2 GiB, task_runner 900 MiB; "
    )
    assert (
        "; the checkpoint volume (/out/checkpoints) has 12 MiB free, below its floor medplay.resources.disk_floor_gib"
        "=0.02 (room for one more checkpoint); " in line
    )
    assert line.endswith(f"checkpoint {checkpoint} saved: then resume (trainer.resume_mode=auto resumes from it)")
    assert "\n" not in line
    assert size_text(GIB) == "1.0 GiB" and size_text(GIB - MIB) == "1023 MiB"
