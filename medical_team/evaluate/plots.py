"""PNG line plots of training metrics (matplotlib, Agg backend), one figure per question a reader asks."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from medical_team.common.vocab import ERROR_TYPES, Category
from medical_team.evaluate.metrics_log import MetricsHistory

if TYPE_CHECKING:
    from matplotlib.figure import Figure

# verl's per-step phase timers (`timing_s/<phase>`), plotted in this order when logged.
TIMING_PHASES: tuple[str, ...] = (
    "step",
    "gen",
    "reward",
    "old_log_prob",
    "ref",
    "adv",
    "update_actor",
    "update_weights",
    "save_checkpoint",
    "testing",
)


@dataclass(frozen=True)
class PlotSpec:
    """One figure: file stem, title, y-axis label and the (label, metric name) series it draws."""

    name: str
    title: str
    ylabel: str
    series: tuple[tuple[str, str], ...]


PLOTS: tuple[PlotSpec, ...] = (
    PlotSpec(
        "reward_per_role",
        "Mean reward per role",
        "reward",
        (("assessor", "assessor/reward_mean"), ("attacker", "attacker/reward_mean")),
    ),
    PlotSpec(
        "assessor_accuracy_per_category",
        "Assessor accuracy per category",
        "accuracy",
        (("all", "assessor/accuracy"), *((c.value, f"assessor/accuracy/{c.value}") for c in Category)),
    ),
    PlotSpec(
        "assessor_recall_per_error_type",
        "Assessor recall per error type",
        "recall",
        tuple((t, f"assessor/recall/{t}") for t in ERROR_TYPES),
    ),
    PlotSpec(
        "attacker_success_and_faithfulness",
        "Attacker success and faithfulness",
        "rate",
        (
            ("success (all adversarial)", "attacker/success_rate"),
            *((f"success ({c.value})", f"attacker/success_rate/{c.value}") for c in Category if c.adversarial),
            ("faithfulness", "attacker/faithfulness_rate"),
        ),
    ),
    PlotSpec(
        "format_violations",
        "Format violation rate per role",
        "rate",
        (("assessor", "assessor/format_violation_rate"), ("attacker", "attacker/format_violation_rate")),
    ),
    PlotSpec(
        "tie_rate",
        "Tie rate and judge reliability",
        "rate",
        (
            ("tie rate", "game/tie_rate"),
            ("judge parse errors", "judge/parse_error_rate"),
            ("judge gold accuracy", "judge/gold_accuracy"),  # logged only when the judge is probed
        ),
    ),
    PlotSpec(
        "attacker_diversity",
        "Attacker diversity within a step (collapse monitor)",
        "score",
        (
            ("distinct-1", "attacker/distinct_1"),
            ("distinct-2", "attacker/distinct_2"),
            ("Self-BLEU", "attacker/self_bleu"),
        ),
    ),
    PlotSpec(
        "attacker_edit_size",
        "Attacker edit size against the seed (collapse monitor)",
        "share",
        (("edit distance", "attacker/edit_distance"), ("identical copies", "attacker/copy_rate")),
    ),
    PlotSpec(
        "response_length",
        "Response length per role (collapse monitor)",
        "tokens",
        tuple(
            (f"{role} {stat}", f"{role}/response_length/{stat}")
            for role in ("attacker", "assessor")
            for stat in ("mean", "p90")
        ),
    ),
    PlotSpec(
        "response_clip_rate",
        "Responses that hit the length cap (collapse monitor)",
        "share",
        tuple((role, f"{role}/response_length/clip_rate") for role in ("attacker", "assessor")),
    ),
    PlotSpec(
        "assessor_verdict_share",
        "Assessor's verdict shares (collapse monitors)",
        "share",
        (("majority verdict", "assessor/majority_verdict_share"), ("ERROR verdicts", "assessor/error_verdict_share")),
    ),
    PlotSpec(
        "step_time",
        "Step time and its phases (verl timers)",
        "seconds",
        tuple((phase, f"timing_s/{phase}") for phase in TIMING_PHASES),
    ),
)


def render_plot(spec: PlotSpec, history: MetricsHistory, path: Path) -> list[str]:
    """Draw the spec's series that were logged into a PNG at `path`; return their labels ([] writes nothing)."""
    import matplotlib.pyplot as plt

    figure = draw_plot(spec, history)
    if figure is None:
        return []
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        figure.savefig(path, format="png")
        return [line.get_label() for line in figure.axes[0].get_lines()]
    finally:
        plt.close(figure)


def draw_plot(spec: PlotSpec, history: MetricsHistory) -> Figure | None:
    """The spec's figure over the series that were logged (None when none was); the caller closes it."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    drawn = [(label, *history.series(metric)) for label, metric in spec.series]
    drawn = [(label, steps, values) for label, steps, values in drawn if steps]
    if not drawn:
        return None
    figure, axes = plt.subplots(figsize=(7, 4), dpi=100)
    try:
        for label, steps, values in drawn:
            axes.plot(steps, values, marker="o" if len(steps) < 30 else None, markersize=3, label=label)
        axes.set_title(spec.title)
        axes.set_xlabel("training step")
        # Steps are whole: no tick at 1.25 between steps 1 and 2 (one tick is enough: a run of one step has one).
        axes.xaxis.set_major_locator(MaxNLocator(integer=True, min_n_ticks=1))
        axes.set_ylabel(spec.ylabel)
        axes.grid(alpha=0.3)
        axes.legend(fontsize="small", loc="best")
        figure.tight_layout()
    except BaseException:
        plt.close(figure)
        raise
    return figure
