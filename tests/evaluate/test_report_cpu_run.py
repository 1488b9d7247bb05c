"""`medplay report` on the metrics JSONL of a real cpu-smoke training run (4 steps of `medplay train profile=cpu-smoke`).

data/cpu_smoke_metrics.jsonl is that run's file as verl's file logger wrote it (GAME.md metrics, the
collapse monitors, verl's own); regenerate with `medplay train profile=cpu-smoke trainer.total_training_steps=4`.
"""

from pathlib import Path

from PIL import Image
from spec_names import GAME_PLOT_LABELS, MONITOR_PLOT_LABELS

from medical_team.cli import main
from medical_team.evaluate.metrics_log import read_metrics

METRICS = Path(__file__).parent / "data" / "cpu_smoke_metrics.jsonl"

# What a self-play run logs: every GAME.md series and collapse monitor, and verl's timers except `reward` (the agent loop
# scores training games itself) and `testing` (no validation in this demo); cpu-smoke saves a checkpoint at its last step.
EXPECTED = {
    **GAME_PLOT_LABELS,
    **MONITOR_PLOT_LABELS,
    "step_time": ["step", "gen", "old_log_prob", "ref", "adv", "update_actor", "update_weights", "save_checkpoint"],
}


def test_real_run_metrics_file_has_every_step():
    history = read_metrics(METRICS)
    assert history.steps == [1, 2, 3, 4]
    assert history.replaced_steps == 0


def test_report_of_a_real_run_draws_every_plot(tmp_path, capsys):
    output = tmp_path / "report"
    assert main(["report", "--metrics", str(METRICS), "--output", str(output)]) == 0
    assert "wrote 12 of 12 plots" in capsys.readouterr().out
    page = (output / "report.md").read_text()
    for name, labels in EXPECTED.items():
        with Image.open(output / f"{name}.png") as image:
            assert image.format == "PNG" and image.width > 100 and image.height > 100
            assert sum(1 for count in image.convert("L").histogram() if count) > 10
        assert f"]({name}.png)" in page
        assert f"Series: {', '.join(labels)}." in page
