"""`medplay compare`: evaluations of the same notes side by side, with Wilson intervals and McNemar p-values."""

import json

import pytest

from medical_team.cli import main
from medical_team.evaluate.benchmark import load_benchmark
from medical_team.evaluate.comparison import mcnemar_exact, wilson_interval
from medical_team.evaluate.evaluation import evaluate, write_outputs
from medical_team.evaluate.generation import GenerationSettings

NOTES = 40


def test_wilson_interval_matches_published_values() -> None:
    # Newcombe (1998), table I: 81/263 -> 0.2553-0.3662; the textbook 5/10 and 0/10 cases.
    assert wilson_interval(81, 263) == pytest.approx((0.2553, 0.3662), abs=1e-4)
    assert wilson_interval(5, 10) == pytest.approx((0.2366, 0.7634), abs=1e-4)
    assert wilson_interval(0, 10) == pytest.approx((0.0, 0.2775), abs=1e-4)


def test_mcnemar_exact_is_a_two_sided_binomial_test_on_discordant_pairs() -> None:
    assert mcnemar_exact(1, 9) == pytest.approx(2 * 11 / 1024)  # P(X <= 1), X ~ Bin(10, 1/2), doubled
    assert mcnemar_exact(9, 1) == mcnemar_exact(1, 9)
    assert mcnemar_exact(0, 0) == 1.0
    assert mcnemar_exact(5, 5) == 1.0


class ConstantAssessor:
    """Gives the same answer to every note (the collapse the comparison must make visible)."""

    def __init__(self, body: str) -> None:
        self.body = body

    def generate(self, prompts):
        return [f"Reading. </think> <answer>\n{self.body}\n</answer>" for _ in prompts]


class GoldAssessor:
    """Answers every note with its ground truth."""

    def __init__(self, notes) -> None:
        self.by_text = {note.text: note for note in notes}

    def generate(self, prompts):
        out = []
        for messages in prompts:
            note = self.by_text[messages[-1]["content"].split("Clinical note:\n", 1)[1]]
            body = f'verdict: ERROR\nsentence: "{note.error_sentence}"' if note.error_flag else "verdict: NO_ERROR"
            out.append(f"Reading. </think> <answer>\n{body}\n</answer>")
        return out


def evaluated(generator, folder, notes: int = NOTES):
    """`medplay eval`'s own outputs for a scripted generator on the first `notes` benchmark notes."""
    benchmark = load_benchmark(None).head(notes)
    settings = GenerationSettings(max_new_tokens=8, batch_size=64)
    result, responses = evaluate(generator, benchmark, settings, {"model": "scripted", "backend": "x"})
    write_outputs(result, responses, benchmark.golds, folder)
    return folder


@pytest.fixture(scope="module")
def evals(test_notes, tmp_path_factory):
    root = tmp_path_factory.mktemp("evals")
    return {
        "always-error": evaluated(ConstantAssessor("verdict: ERROR"), root / "a"),
        "always-clean": evaluated(ConstantAssessor("verdict: NO_ERROR"), root / "b"),
        "gold": evaluated(GoldAssessor(test_notes), root / "c"),
    }


def test_compare_writes_the_table_and_paired_tests(evals, tmp_path, capsys) -> None:
    argv = ["compare", *(f"--eval={name}={folder}" for name, folder in evals.items()), "--output", str(tmp_path)]
    assert main(argv) == 0
    result = json.loads((tmp_path / "compare.json").read_text())
    error, clean, gold = result["rungs"]
    errors = error["verdicts"]["gold_error"]["ERROR"]
    assert error["flag_accuracy"]["count"] == errors and errors + clean["flag_accuracy"]["count"] == NOTES
    assert error["majority_verdict"] == "ERROR" and error["majority_verdict_share"] == 1.0
    assert clean["verdicts"]["gold_error"] == {"ERROR": 0, "NO_ERROR": errors, "unreadable": 0}
    assert gold["flag_accuracy"]["value"] == gold["error_sentence_accuracy"]["value"] == 1.0
    low, high = gold["flag_accuracy"]["ci95"]
    assert high == 1.0 and low == pytest.approx(wilson_interval(NOTES, NOTES)[0], abs=1e-4)
    pairs = {(p["first"], p["second"]): p for p in result["paired"]}
    assert set(pairs) == {("always-error", "always-clean"), ("always-clean", "gold"), ("always-error", "gold")}
    # always-clean -> gold: gold is right wherever always-clean is; it gains every error note
    flag = pairs[("always-clean", "gold")]["flag"]
    assert (flag["only_first_right"], flag["only_second_right"]) == (0, errors)
    assert flag["mcnemar_p"] == pytest.approx(mcnemar_exact(0, errors), rel=1e-5)
    page = (tmp_path / "compare.md").read_text()
    assert "| gold | 40 | 1.000 [" in page and "always-clean → gold" in page
    assert "gold: flag accuracy 1.000" in capsys.readouterr().out


def test_evaluations_of_other_notes_are_refused(evals, tmp_path, capsys) -> None:
    fewer = evaluated(ConstantAssessor("verdict: ERROR"), tmp_path / "fewer", notes=NOTES - 1)
    assert main(["compare", f"--eval=all={evals['gold']}", f"--eval=fewer={fewer}", "--output", str(tmp_path)]) == 2
    assert "scored other notes than all" in capsys.readouterr().err


def test_a_folder_without_eval_json_is_named(tmp_path, capsys) -> None:
    assert main(["compare", f"--eval=x={tmp_path}", "--output", str(tmp_path / "out")]) == 2
    assert f"{tmp_path}/eval.json" in capsys.readouterr().err
