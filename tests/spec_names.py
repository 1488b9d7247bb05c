"""Names the specification fixes, written out independently of the code that produces them.

Shared by the tests (import as `spec_names`: `tests/` is on pytest's path).
"""

from __future__ import annotations

from medical_team.common.vocab import ERROR_TYPES, Category

ADVERSARIAL = [c.value for c in Category if c.adversarial]

# Every metric name of docs/game.md's "Metrics" table, with <category> and <error_type> expanded, less the extra
# counts (`game/games`, `game/ties_removed`) and the trainer's gold-probe keys.
GAME_MD_METRICS = [
    *(f"game/count/{c.value}" for c in Category),
    "game/tie_rate",
    "game/error_note_rate",
    "assessor/accuracy",
    *(f"assessor/accuracy/{c.value}" for c in Category),
    *(f"assessor/recall/{t}" for t in ERROR_TYPES),
    "assessor/false_alarm_rate",
    "assessor/miss_rate",
    "assessor/sentence_accuracy",
    "assessor/reward_mean",
    "assessor/format_violation_rate",
    "attacker/success_rate",
    *(f"attacker/success_rate/{c}" for c in ADVERSARIAL),
    "attacker/faithfulness_rate",
    "attacker/reward_mean",
    "attacker/format_violation_rate",
    "judge/calls",
    "judge/parse_error_rate",
    "judge/latency_s",
]

# The collapse monitors docs/game.md names ("Collapse monitors"), logged every step.
MONITOR_METRICS = [
    "attacker/distinct_1",
    "attacker/distinct_2",
    "attacker/self_bleu",
    "attacker/edit_distance",
    "attacker/copy_rate",
    *(f"{role}/response_length/{stat}" for role in ("attacker", "assessor") for stat in ("mean", "p90", "clip_rate")),
    "assessor/majority_verdict_share",
    "assessor/error_verdict_share",
]

# The series each training-report plot draws from the game's metrics (the step-time plot's depend on the run).
GAME_PLOT_LABELS = {
    "reward_per_role": ["assessor", "attacker"],
    "assessor_accuracy_per_category": ["all", *(c.value for c in Category)],
    "assessor_recall_per_error_type": list(ERROR_TYPES),
    "attacker_success_and_faithfulness": [
        "success (all adversarial)",
        "success (adversarial_harmful)",
        "success (adversarial_benign)",
        "faithfulness",
    ],
    "format_violations": ["assessor", "attacker"],
    "tie_rate": ["tie rate", "judge parse errors"],
}

# The series of the collapse monitors' plots.
MONITOR_PLOT_LABELS = {
    "attacker_diversity": ["distinct-1", "distinct-2", "Self-BLEU"],
    "attacker_edit_size": ["edit distance", "identical copies"],
    "response_length": ["attacker mean", "attacker p90", "assessor mean", "assessor p90"],
    "response_clip_rate": ["attacker", "assessor"],
    "assessor_verdict_share": ["majority verdict", "ERROR verdicts"],
}
