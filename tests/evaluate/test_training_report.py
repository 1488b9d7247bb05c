"""`medplay report` on a metrics file written by verl's own Tracking file logger."""

import math

import pytest
from PIL import Image
from spec_names import GAME_PLOT_LABELS, MONITOR_PLOT_LABELS

from medical_team.cli import main
from medical_team.evaluate.metrics_log import read_metrics
from medical_team.evaluate.plots import PLOTS, draw_plot, render_plot
from medical_team.game.metrics import metric_names
from medical_team.game.monitors import monitor_names

STEPS = 6
PHASES = ("step", "gen", "reward", "old_log_prob", "ref", "adv", "update_actor", "update_weights")


def step_metrics(step: int) -> dict[str, float]:
    """Every game metric (docs/game.md), every collapse monitor and verl's timers, varying with the step like a run would."""
    names = (*metric_names(), *monitor_names())
    data = {name: 0.5 + 0.4 * math.sin(step + index) for index, name in enumerate(names)}
    data.update({f"timing_s/{phase}": 0.1 * (index + 1) + 0.01 * step for index, phase in enumerate(PHASES)})
    data["critic/score/mean"] = 0.1 * step
    return data


@pytest.fixture(scope="module")
def metrics_file(tmp_path_factory):
    from verl.utils.tracking import Tracking

    path = tmp_path_factory.mktemp("run") / "metrics.jsonl"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("VERL_FILE_LOGGER_PATH", str(path))
        tracking = Tracking(project_name="medplay", experiment_name="report-test", default_backend=["file"])
        for step in range(1, STEPS + 1):
            tracking.log(data=step_metrics(step), step=step)
        tracking.finish()
    return path


EXPECTED_LABELS = {**GAME_PLOT_LABELS, **MONITOR_PLOT_LABELS, "step_time": list(PHASES)}


def test_metrics_file_is_read_step_by_step(metrics_file):
    history = read_metrics(metrics_file)
    assert history.steps == list(range(1, STEPS + 1))
    steps, values = history.series("assessor/accuracy")
    assert steps == history.steps
    assert values == pytest.approx([step_metrics(s)["assessor/accuracy"] for s in steps])


def test_each_plot_draws_its_expected_series(metrics_file, tmp_path):
    history = read_metrics(metrics_file)
    assert {spec.name for spec in PLOTS} == set(EXPECTED_LABELS)
    for spec in PLOTS:
        png = tmp_path / f"{spec.name}.png"
        assert render_plot(spec, history, png) == EXPECTED_LABELS[spec.name]
        with Image.open(png) as image:
            assert image.format == "PNG"
            assert image.width > 100 and image.height > 100
            assert sum(1 for count in image.convert("L").histogram() if count) > 10  # lines and text, not blank


def test_report_command_writes_every_png_and_the_page(metrics_file, tmp_path, capsys):
    output = tmp_path / "report"
    assert main(["report", "--metrics", str(metrics_file), "--output", str(output)]) == 0
    page = (output / "report.md").read_text()
    for name in EXPECTED_LABELS:
        assert f"]({name}.png)" in page
        with Image.open(output / f"{name}.png") as image:
            image.verify()
    assert "wrote 12 of 12 plots" in capsys.readouterr().out


def test_missing_series_are_reported_not_drawn(tmp_path, capsys):
    path = tmp_path / "m.jsonl"
    path.write_text('{"step": 1, "data": {"timing_s/step": 2.0}}\n{"step": 2, "data": {"timing_s/step": 1.5}}\n')
    assert main(["report", "--metrics", str(path), "--output", str(tmp_path / "out")]) == 0
    out = capsys.readouterr().out
    assert "wrote 1 of 12 plots" in out
    assert "reward_per_role: not drawn" in out
    assert not (tmp_path / "out" / "reward_per_role.png").exists()


def test_resumed_run_keeps_the_last_record_of_a_step(tmp_path):
    path = tmp_path / "m.jsonl"
    path.write_text(
        '{"step": 1, "data": {"game/tie_rate": 0.5}}\n{"step": 2, "data": {"game/tie_rate": 0.4}}\n'
        '{"step": 2, "data": {"game/tie_rate": 0.3}}\n'
    )
    history = read_metrics(path)
    assert history.series("game/tie_rate") == ([1, 2], [0.5, 0.3])
    assert history.replaced_steps == 1


@pytest.mark.parametrize(
    ("content", "where"),
    [
        ("not json\n", "m.jsonl:row 1: field 'line'"),
        ('{"step": 1, "data": {}}\n{"step": "x", "data": {}}\n', "m.jsonl:row 2: field 'step'"),
        ('{"step": 1, "metrics": {}}\n', "m.jsonl:row 1: field 'data'"),
        ("\n", "m.jsonl:row 1: field 'step'"),
    ],
)
def test_bad_metrics_file_is_one_clear_line(tmp_path, capsys, content, where):
    path = tmp_path / "m.jsonl"
    path.write_text(content)
    assert main(["report", "--metrics", str(path), "--output", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"medplay report: error: {where}")
    assert "Traceback" not in err


def test_missing_metrics_file(tmp_path, capsys):
    assert main(["report", "--metrics", str(tmp_path / "nope.jsonl"), "--output", str(tmp_path)]) == 2
    assert "no such file" in capsys.readouterr().err


@pytest.mark.parametrize("steps", [1, 2, 3, 5])
def test_the_step_axis_of_a_short_run_shows_whole_steps(tmp_path, steps):
    # A run of a few steps once had ticks at 1.00, 1.25, 1.50...: a step is whole.
    import matplotlib.pyplot as plt

    path = tmp_path / "m.jsonl"
    path.write_text(
        "".join(f'{{"step": {s}, "data": {{"timing_s/step": {1.0 + 0.1 * s}}}}}\n' for s in range(1, steps + 1))
    )
    spec = next(spec for spec in PLOTS if spec.name == "step_time")
    figure = draw_plot(spec, read_metrics(path))
    try:
        figure.canvas.draw()
        axes = figure.axes[0]
        low, high = axes.get_xlim()
        shown = [label.get_text() for label in axes.get_xticklabels() if low <= label.get_position()[0] <= high]
    finally:
        plt.close(figure)
    assert shown == [str(s) for s in range(1, steps + 1)]
