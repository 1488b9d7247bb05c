"""Human-readable views of an evaluation result: the Markdown summary and the console comparison table."""

from __future__ import annotations

from typing import Any

from medical_team.evaluate.baselines import BASELINE_KEYS

# Score key -> column heading.
HEADINGS = {
    "error_flag_accuracy": "error-flag acc.",
    "error_sentence_accuracy": "error-sentence acc.",
    "correction_rouge1_f1": "correction ROUGE-1 F1",
}
# The official script's names for the same three scores, in the `official` blocks.
OFFICIAL_KEYS = ("Error Flags Accuracy", "Error Sentence Detection Accuracy", "R1FC")
STRICT_LABEL, OFFICIAL_LABEL = "strict", "official script"


def _fmt(value: float | None) -> str:
    """A score with three decimals, or a dash when undefined."""
    return "–" if value is None else f"{value:.3f}"


def _pair(name: str, scores: dict[str, Any]) -> list[tuple[str, ...]]:
    """Two rows of one entrant: medplay's strict scores, then the official script's."""
    official = scores["official"]
    return [
        (f"{name} ({STRICT_LABEL})", *(_fmt(scores[key]) for key in BASELINE_KEYS)),
        (f"{name} ({OFFICIAL_LABEL})", *(_fmt(official[key]) for key in OFFICIAL_KEYS)),
    ]


def comparison_rows(result: dict[str, Any]) -> list[tuple[str, ...]]:
    """(name, score...) rows: the model, then each baseline, each strict and as the official script scores it."""
    rows = _pair("model", result)
    for name, scores in result["baselines"].items():
        rows += _pair(name.replace("_", " "), scores)
    return rows


def _table(header: tuple[str, ...], rows: list[tuple[str, ...]]) -> list[str]:
    """A Markdown table."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return lines + ["| " + " | ".join(row) + " |" for row in rows]


def _intro(result: dict[str, Any]) -> str:
    """One paragraph: which model, how it generated, on which notes."""
    generation = result["generation"]
    return (
        f"Model `{result['model']}` ({result['backend']}, {generation['decoding']}, at most "
        f"{generation['max_new_tokens']} new tokens) "
        f"on `{result['benchmark']}`: {result['notes']} notes ({result['error_notes']} with an error, "
        f"{result['clean_notes']} clean). Scored with the MEDIQA-CORR 2024 definitions twice: *{STRICT_LABEL}* "
        "(medplay: an unreadable verdict or a quote that matches no sentence is wrong; ROUGE-1 of `rouge-score`) "
        f"and as the *{OFFICIAL_LABEL}* scores `submission.txt` against `reference.csv` (its `rouge` 1.0.1 "
        "ROUGE-1 composite, R1FC); docs/evaluation.md says where they differ."
    )


def _facts(result: dict[str, Any]) -> list[str]:
    """Bullet points: format violations, verdict counts, error types, corrections."""
    rules = ", ".join(f"{k}: {v}" for k, v in result["format_violations_by_rule"].items()) or "none"
    both = result["correction_rouge1_f1_where_both_corrected"]
    official = result["official"]
    counters = official["counters"]
    return [
        f"- Format violation rate: {_fmt(result['format_violation_rate'])} ({rules})",
        f"- Verdicts: {', '.join(f'{k} {v}' for k, v in result['confusion'].items())}",
        f"- Error type named correctly on flagged error notes: {_fmt(result['error_type_accuracy_when_flagged'])}",
        f"- ROUGE-1 F1 where model and reference both correct: {_fmt(both)} ({result['corrections_compared']} notes)",
        (
            f"- Official script: R1F subset check {_fmt(official['R1F_subset_check'])}, "
            f"{counters['total_system_texts']} of {counters['total_texts']} notes answered, "
            f"{counters['system_provided_correct_na']} matching NA, {official['invalid_lines']} run lines skipped"
        ),
    ]


def _per_type_table(result: dict[str, Any]) -> list[str]:
    """Scores per error type, then on the clean notes."""
    groups = [*result["per_error_type"].items(), ("clean notes", result["clean"])]
    rows = [(name, str(s["notes"]), *(_fmt(s[key]) for key in HEADINGS)) for name, s in groups]
    return _table(("error type", "notes", *HEADINGS.values()), rows)


def _positions_table(result: dict[str, Any]) -> list[str]:
    """Position statistics of the predicted and of the reference error sentences."""
    positions = result["positions"]
    rows = [
        (
            name,
            str(stats["count"]),
            _fmt(stats["last_sentence_rate"]),
            _fmt(stats["first_sentence_rate"]),
            _fmt(stats["mean_relative_position"]),
            " ".join(map(str, stats["relative_position_histogram"])),
        )
        for name, stats in (("predicted", positions["predicted"]), ("reference", positions["reference"]))
    ]
    header = ("sentences", "count", "last sentence", "first sentence", "mean relative position", "histogram")
    return _table(header, rows)


def markdown_summary(result: dict[str, Any]) -> str:
    """The eval.md page."""
    unresolved = result["positions"]["predicted"]["unresolved_sentences"]
    lines = [
        "# MEDEC benchmark evaluation",
        "",
        _intro(result),
        "",
        *_table(("", *HEADINGS.values()), comparison_rows(result)),
        "",
        *_facts(result),
        "",
        "## Per error type",
        "",
        *_per_type_table(result),
        "",
        "## Where the flagged sentences are",
        "",
        "Relative position = sentence id / (sentences in the note - 1); the histogram has 5 equal bins.",
        "",
        *_positions_table(result),
        "",
        f"{unresolved} flagged notes quoted a sentence that matches none of the note's sentences.",
        "",
    ]
    return "\n".join(lines)


def console_table(result: dict[str, Any]) -> str:
    """The model's scores beside the baselines, as aligned plain text."""
    header = ("", *HEADINGS.values())
    rows = [header, *comparison_rows(result)]
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    return "\n".join("  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip() for row in rows)
