"""Startup stages on the console (medical_team/launcher/console/startup.py), and the verl log lines they are read from."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from pprint import pformat

from processes import sigterm_once_ready

from medical_team.launcher.console.startup import TRAINER_STAGES, TrainerStages, ready_stages, stage
from medical_team.launcher.launch import stop_cannot_wait


def verl_trainer_setup_source() -> str:
    """The text of verl's V1 trainer `_setup`, where the stages' log lines are written."""
    origin = importlib.util.find_spec("verl.trainer.ppo.v1.trainer_base").origin
    text = Path(origin).read_text()
    start = text.index("    def _setup(self):")
    return text[start : text.index("\n    def ", start + 1)] + text[text.index("def _init_dataloader") :]


def test_verl_task_runner_prints_the_config_first_thing_in_its_process():
    # A verl contact (docs/verl-integration.md): the trainer process's stage ends where verl's task runner pprints
    # the composed config, before the trainer is built; pprint sorts keys, and the first is `actor_rollout_ref`.
    origin = importlib.util.find_spec("verl.trainer.main_ppo").origin
    text = Path(origin).read_text()
    run = text[text.index("    def run(self, config") :]
    assert run.index("pprint(OmegaConf.to_container(config") < run.index("tq.init(")
    config = {"trainer": {}, "data": {}, "algorithm": {}, "actor_rollout_ref": {"actor": {}}}
    assert pformat(config).startswith(TRAINER_STAGES[0].ends_with)


def test_verl_logs_each_stage_end_in_the_order_the_console_expects():
    # A verl contact (docs/verl-integration.md): the later stage lines are verl's own logger.info texts.
    source = verl_trainer_setup_source()
    setup = source[: source.index("def _init_dataloader")]
    data_loaders, engines, rollout = TRAINER_STAGES[1:]
    for trainer_stage in (data_loaders, engines, rollout):
        assert trainer_stage.ends_with in source, trainer_stage
    # The dataloader is built first (`_init_dataloader`, called at the top of `_setup`), then the engines, then
    # the rollout servers and the checkpoint engine, then "ready to fit".
    assert setup.index("self._init_dataloader()") < setup.index(engines.ends_with)
    assert setup.index(engines.ends_with) < setup.index("LLMServerManager.create(")
    assert setup.index("LLMServerManager.create(") < setup.index(rollout.ends_with)
    assert re.search(r'logger\.info\(\s*f"train and validate dataloader initialized', source)


def test_the_stages_are_said_as_their_lines_reach_the_log(tmp_path: Path, capsys):
    log = tmp_path / "train.log"
    log.write_text("an earlier run's line: all initialize finished, ready to fit\n")
    watcher = TrainerStages(log, poll_s=3600)  # polled by hand below
    with watcher:
        assert capsys.readouterr().out == "medplay: trainer process: starting\n"
        with log.open("a") as sink:
            sink.write("(TaskRunnerV1 pid=1) {'actor_rollout_ref': {'actor': {'_target_': 'verl.workers.config.X',\n")
            sink.flush()
            watcher.poll()
            out = capsys.readouterr().out.splitlines()
            assert re.fullmatch(r"medplay: trainer process: ready after \d+ s", out[0]), out
            assert out[1:] == ["medplay: data loaders: starting"]
            sink.write("(TaskRunnerV1 pid=1) INFO:2026-11-24 22:25:27,658:train and validate dataloader initialized, ")
            sink.flush()
            watcher.poll()  # half a line: not yet
            assert capsys.readouterr().out == ""
            sink.write("train dataset size: 576, val dataset size: 62\n")
            sink.write("(TaskRunnerV1 pid=1) INFO:...:create worker group dict_keys(['actor_rollout_ref'])\n")
            sink.flush()
            watcher.poll()
            out = capsys.readouterr().out.splitlines()
            assert re.fullmatch(r"medplay: data loaders: ready after \d+ s", out[0]), out
            assert out[1:] == ["medplay: actor and reference engines: starting"]
            sink.write("(TaskRunnerV1 pid=1) INFO:...:actor and ref model engine initialized\n")
            sink.write("(TaskRunnerV1 pid=1) INFO:...:all initialize finished, ready to fit\n")
            sink.flush()
            watcher.poll()
    out = capsys.readouterr().out.splitlines()
    assert [re.sub(r"\d+ s", "N s", line) for line in out] == [
        "medplay: actor and reference engines: ready after N s",
        "medplay: rollout server: starting",
        "medplay: rollout server: ready after N s",
        "medplay: verl's trainer ready after N s; one line per step follows",
    ]
    assert set(watcher.durations) == {
        "trainer process", "data loaders", "actor and reference engines", "rollout server", "verl's trainer"
    }  # fmt: skip
    # What the console said reads back as the stages it named, the trainer's whole start among them.
    assert set(ready_stages("\n".join(out))) == {"actor and reference engines", "rollout server", "verl's trainer"}


def test_a_stage_the_launcher_runs_itself_is_timed(capsys):
    with stage("Ray", "(a new local cluster)"):
        pass
    said = capsys.readouterr().out
    assert said.splitlines() == [
        "medplay: Ray: starting (a new local cluster)",
        "medplay: Ray: ready after 0 s",
    ]
    # Read back with the seconds shown; a line that only quotes one (a worker's prefix before it) is no stage's end.
    quoted = "(TaskRunnerV1 pid=1) medplay: judge server: ready after 9 s"
    console = f"{said}{quoted}\nmedplay: judge server: ready after 41 s\n"
    assert ready_stages(console) == {"Ray": 0.0, "judge server": 41.0}


def test_a_stop_does_not_wait_for_a_step_while_the_trainer_starts(tmp_path: Path):
    log = tmp_path / "train.log"
    log.write_text("")
    stages = TrainerStages(log, poll_s=3600)  # polled by hand below
    judge_waits: list[str | None] = [None]
    reason = stop_cannot_wait(stages, lambda: judge_waits[0])
    assert reason() == "verl's trainer was still starting (trainer process), with no step to save"
    log.write_text("".join(f"{trainer_stage.ends_with}\n" for trainer_stage in TRAINER_STAGES[:3]))
    stages.poll()
    assert stages.starting() == "rollout server" and "(rollout server)" in str(reason())
    with log.open("a") as sink:
        sink.write(f"{TRAINER_STAGES[-1].ends_with}\n")
    stages.poll()
    assert stages.starting() is None and reason() is None  # ready: a stop waits for the step to end
    judge_waits[0] = "2 game(s) waiting for the judge"
    assert reason() == "2 game(s) waiting for the judge"


def test_sigterm_while_the_trainer_starts_stops_at_once(tmp_path: Path):
    """A real process: the stop request is written and the main thread interrupted, the 600 s grace not waited out."""
    setup = (
        "from medical_team.launcher.launch import stop_cannot_wait\n"
        "from medical_team.launcher.console.startup import TrainerStages\n"
        "(folder / 'train.log').write_text('')\nstages = TrainerStages(folder / 'train.log', poll_s=0.1)"
    )
    status, out = sigterm_once_ready(tmp_path, "stop_cannot_wait(stages, lambda: None)", setup, context="stages")
    assert status == 0 and out.startswith("medplay: trainer process: starting\nready\n")
    starting = "verl's trainer was still starting (trainer process), with no step to save"
    assert f"SIGTERM received while {starting}: stopping now, without waiting for a step to end" in out
    assert out.splitlines()[-1] == f"stopped: SIGTERM received while {starting}"
    assert (tmp_path / "medplay_stop_requested").is_file()


def test_what_the_rollout_engine_did_with_its_compile_cache_is_said_once_in_its_stage(tmp_path: Path, capsys):
    log = tmp_path / "train.log"
    log.write_text("")
    watcher = TrainerStages(log, poll_s=3600)  # polled by hand below
    with watcher, log.open("a") as sink:
        sink.write("(TaskRunnerV1 pid=1) {'actor_rollout_ref': {}}\n")
        sink.write("(TaskRunnerV1 pid=1) INFO:...:train and validate dataloader initialized\n")
        sink.write("(TaskRunnerV1 pid=1) INFO:...:actor and ref model engine initialized\n")
        loaded = "INFO [backends.py:293] Directly load the compiled graph(s) for compile range (1, 8192) from the cache, took 2.514 s"
        sink.write(f"(Worker pid=2) {loaded}\n(Worker pid=3) {loaded}\n")
        sink.flush()
        watcher.poll()
    out = capsys.readouterr().out.splitlines()
    said = [line for line in out if "cache" in line]
    assert said == ["medplay: rollout server: compiled graphs loaded from the cache in 2.5 s"], out
