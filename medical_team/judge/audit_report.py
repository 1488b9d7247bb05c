"""Write a judge audit: `audit.json` (every figure), `audit.md` (tables), `audit_items.jsonl` (one line per item)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from medical_team.judge.audit import ANSWERS, AuditRun, AuditThresholds, audit_metrics, gold_counts

AUDIT_JSON = "audit.json"
AUDIT_MD = "audit.md"
AUDIT_ITEMS = "audit_items.jsonl"


def audit_document(
    run: AuditRun, judge: str, gold_source: dict[str, Any], thresholds: AuditThresholds
) -> dict[str, Any]:
    """The content of audit.json: the judge, the gold set, the metrics and whether the judge passes."""
    metrics = audit_metrics(run)
    failures = thresholds.failures(metrics)
    return {
        "judge": judge,
        "gold": {**gold_source, **gold_counts(run.items)},
        "metrics": metrics,
        "thresholds": thresholds.__dict__,
        "passed": not failures,
        "failures": failures,
    }


def _confusion_md(title: str, table: dict[str, dict[str, int]]) -> list[str]:
    lines = [f"| {title}: truth \\ judge | {' | '.join(ANSWERS)} |", "|---|" + "---:|" * len(ANSWERS)]
    return lines + [f"| {truth} | {' | '.join(str(table[truth][a]) for a in ANSWERS)} |" for truth in ("yes", "no")]


def audit_markdown(document: dict[str, Any]) -> str:
    """audit.md: verdict, headline figures, confusion tables, per type and per kind."""
    m = document["metrics"]
    err, faithful, latency = m["error_present"], m["faithful"], m["latency"]
    gold = document["gold"]
    source = (
        f"Gold: {gold['items']} items from {gold['pairs']} MEDEC error notes ({gold['source']}, split {gold['split']})."
    )
    verdict = "PASSED" if document["passed"] else "FAILED: " + "; ".join(document["failures"])
    lines = [
        f"# Judge audit: {document['judge']}",
        "",
        verdict,
        "",
        source,
        "",
        "| figure | value |",
        "|---|---:|",
        f"| both answers right | {m['accuracy']:.3f} |",
        f"| error_present accuracy | {err['accuracy']:.3f} |",
        f"| error_present precision | {err['precision']:.3f} |",
        f"| error_present recall | {err['recall']:.3f} |",
        f"| faithful accuracy | {faithful['accuracy']:.3f} |",
        f"| parse error rate | {m['parse_error_rate']:.3f} |",
        f"| tie rate | {m['tie_rate']:.3f} |",
        f"| settled by a rule | {m['rule_decided_rate']:.3f} |",
        f"| latency, mean per batch (s) | {latency['mean_batch_s']:.3f} |",
        f"| latency, per item (s) | {latency['per_item_s']:.4f} |",
        "",
        *_confusion_md("error_present", err["confusion"]),
        "",
        *_confusion_md("faithful", faithful["confusion"]),
        "",
        "| error type | items | with error | accuracy | precision | recall |",
        "|---|---:|---:|---:|---:|---:|",
        *(
            f"| {t} | {s['count']} | {s['positives']} | {s['accuracy']:.3f} | {s['precision']:.3f} | {s['recall']:.3f} |"
            for t, s in m["error_present_by_type"].items()
        ),
        "",
        "| kind | items | error_present accuracy | faithful accuracy |",
        "|---|---:|---:|---:|",
        *(
            f"| {k} | {s['count']} | {s['error_present_accuracy']:.3f} | {s['faithful_accuracy']:.3f} |"
            for k, s in m["by_kind"].items()
        ),
    ]
    return "\n".join(lines) + "\n"


def write_audit(output_dir: Path, run: AuditRun, document: dict[str, Any]) -> None:
    """Write audit.json, audit.md and audit_items.jsonl into `output_dir` (created if needed)."""
    output_dir.mkdir(parents=True, exist_ok=True)
    (output_dir / AUDIT_JSON).write_text(json.dumps(document, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    (output_dir / AUDIT_MD).write_text(audit_markdown(document), encoding="utf-8")
    with (output_dir / AUDIT_ITEMS).open("w", encoding="utf-8") as handle:
        for item, verdict in zip(run.items, run.verdicts, strict=True):
            record = {
                "note_id": item.request.seed.note_id,
                "kind": item.kind,
                "seed_label": item.request.seed.label.value,
                "intended_label": item.request.intended_label.value,
                "error_type": item.error_type,
                "expected": {"error_present": item.error_present, "faithful": item.faithful},
                "verdict": verdict.__dict__,
            }
            handle.write(json.dumps(record, ensure_ascii=False) + "\n")
