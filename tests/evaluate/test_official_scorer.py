"""eval.json's `official` block equals the MEDIQA-CORR 2024 script (re-implemented in mediqa_corr_2024.py)
on medplay's own submission.txt and reference.csv: gold answers, both trivial baselines, scripted answers."""

import json
import re

import pytest
from mediqa_corr_2024 import as_eval_json, official_part, parse_run, score

from medical_team.evaluate.baselines import BASELINES
from medical_team.evaluate.benchmark import load_benchmark
from medical_team.evaluate.evaluation import evaluate, write_outputs
from medical_team.evaluate.generation import GenerationSettings
from medical_team.evaluate.gold import GoldNote
from medical_team.evaluate.official import write_reference
from medical_team.evaluate.predictions import NotePrediction
from medical_team.evaluate.submission import MAX_CORRECTION_WORDS, write_submission

BACKSLASHES = r"Give 5\mg of drug \1, then\tstop \\ now"
UNMATCHED = "The moon is made of cheese."


def answer(body: str) -> str:
    return f"Reading the note. </think> <answer>\n{body}\n</answer>"


def gold_answer(note, index: int) -> str:
    if not note.error_flag:
        return answer("verdict: NO_ERROR")
    return answer(f'verdict: ERROR\nsentence: "{note.error_sentence}"\ncorrection: {note.corrected_sentence}')


def always_correct(note, index: int) -> str:
    return answer("verdict: NO_ERROR")


def last_sentence(note, index: int) -> str:
    return answer(f"verdict: ERROR\nsentence: {note.sentences[-1]}\ncorrection: {note.sentences[-1]}")


def mixed(note, index: int) -> str:
    """Six kinds of answer by position: gold, last sentence, clean, unreadable, unmatched quote, backslashes."""
    kind = index % 6
    if kind == 0:
        return gold_answer(note, index)
    if kind == 1:
        return last_sentence(note, index)
    if kind == 2:
        return always_correct(note, index)
    if kind == 3:
        return "I cannot decide."
    if kind == 4:
        return answer(f"verdict: ERROR\nsentence: {UNMATCHED}\ncorrection: It is not.")
    return answer(f"verdict: ERROR\nsentence: {note.sentences[0]}\ncorrection: {BACKSLASHES}")


class Scripted:
    """A stand-in assessor that answers each note by a fixed rule (what is under test comes after generation)."""

    def __init__(self, notes, rule):
        self.by_text = {note.text: note for note in notes}
        self.rule = rule
        self.seen = 0

    def generate(self, prompts):
        out = []
        for messages in prompts:
            note = self.by_text[messages[-1]["content"].split("Clinical note:\n", 1)[1]]
            out.append(self.rule(note, self.seen))
            self.seen += 1
        return out


RULES = {"gold": gold_answer, "always_correct": always_correct, "last_sentence": last_sentence, "mixed": mixed}


@pytest.fixture(scope="module")
def runs(test_notes, tmp_path_factory):
    """One evaluation per rule on all 597 notes: its output folder."""
    benchmark = load_benchmark(None)
    settings = GenerationSettings(max_new_tokens=64, batch_size=100)
    folders = {}
    for name, rule in RULES.items():
        result, responses = evaluate(Scripted(test_notes, rule), benchmark, settings, {"model": name, "backend": "x"})
        folders[name] = tmp_path_factory.mktemp(name)
        write_outputs(result, responses, benchmark.golds, folders[name])
    return folders


def load(folder):
    return json.loads((folder / "eval.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize("name", list(RULES))
def test_official_block_is_the_scripts_figures_on_the_two_files(runs, name):
    folder = runs[name]
    script = score(folder / "submission.txt", folder / "reference.csv")
    assert official_part(load(folder)["official"]) == as_eval_json(script)


@pytest.mark.parametrize("name", list(BASELINES))
def test_baseline_official_blocks_are_the_scripts_figures(runs, test_notes, tmp_path, name):
    golds = [GoldNote.from_note(n) for n in test_notes]
    write_submission(BASELINES[name](golds), tmp_path / "submission.txt")
    write_reference(golds, tmp_path / "reference.csv")
    script = score(tmp_path / "submission.txt", tmp_path / "reference.csv")
    assert official_part(load(runs["gold"])["baselines"][name]["official"]) == as_eval_json(script)


def test_reference_csv_holds_the_strings_the_script_compares(runs, test_notes):
    lines = (runs["gold"] / "reference.csv").read_text(encoding="utf-8").splitlines()
    assert lines[0] == "Text ID,Error Flag,Error Sentence ID,Corrected Sentence"
    assert lines[1].startswith("ms-test-0,1,") and "ms-test-1,0,-1,NA" in lines
    script = score(runs["gold"] / "submission.txt", runs["gold"] / "reference.csv")
    assert script["counters"]["total_texts"] == 597 and script["counters"]["reference_na"] == 286


def test_gold_and_baselines_under_both_definitions(runs):
    gold = load(runs["gold"])
    assert gold["error_flag_accuracy"] == gold["error_sentence_accuracy"] == 1.0
    assert gold["correction_rouge1_f1"] == pytest.approx(1.0)
    official = gold["official"]
    assert official["Error Flags Accuracy"] == official["Error Sentence Detection Accuracy"] == 1.0
    # rouge 1.0.1 scores a perfect match 0.999999995, and strips the quote that opens ms-test-272's correction
    # from the candidate only.
    assert 0.9999 < official["R1FC"] < 1.0
    baselines = gold["baselines"]
    assert round(baselines["always_error_last_sentence"]["correction_rouge1_f1"], 5) == 0.26895
    assert round(baselines["always_error_last_sentence"]["official"]["R1FC"], 5) == 0.26696
    for name, rule in (("always_correct", "always_correct"), ("always_error_last_sentence", "last_sentence")):
        scripted = load(runs[rule])
        assert official_part(scripted["official"]) == official_part(baselines[name]["official"])
        assert scripted["correction_rouge1_f1"] == pytest.approx(baselines[name]["correction_rouge1_f1"])


def test_unreadable_verdicts_and_unmatched_quotes_are_where_the_accuracies_part(runs, test_notes):
    result = load(runs["mixed"])
    official = result["official"]
    clean = [not n.error_flag for n in test_notes]
    unreadable_clean = sum(clean[k] for k in range(597) if k % 6 == 3)
    unmatched_clean = sum(clean[k] for k in range(597) if k % 6 == 4)
    assert unreadable_clean > 0 and unmatched_clean > 0
    assert result["confusion"]["unreadable"] == len(range(3, 597, 6))
    assert result["positions"]["predicted"]["unresolved_sentences"] == len(range(4, 597, 6))
    # Both written `... -1 ...`: the script credits the sentence of every such clean note, the flag of the
    # unreadable ones (`0 -1 NA`), where eval.json counts all of them wrong.
    assert official["Error Flags Accuracy"] * 597 == pytest.approx(
        result["error_flag_accuracy"] * 597 + unreadable_clean
    )
    assert official["Error Sentence Detection Accuracy"] * 597 == pytest.approx(
        result["error_sentence_accuracy"] * 597 + unreadable_clean + unmatched_clean
    )


def test_backslash_corrections_are_read_back_as_written(runs, tmp_path):
    corrections, flags, _, skipped = parse_run(runs["mixed"] / "submission.txt")
    assert skipped == 0 and len(flags) == 597
    assert [corrections[f"ms-test-{k}"] for k in range(5, 597, 6)] == [BACKSLASHES] * len(range(5, 597, 6))
    for escape in (r"\m", r"\1"):  # written as the model gave it, the line breaks the script
        (tmp_path / "raw.txt").write_text(f"ms-test-0 1 2 dose {escape} daily\n", encoding="utf-8")
        with pytest.raises(re.error):
            parse_run(tmp_path / "raw.txt")
    (tmp_path / "raw.txt").write_text("ms-test-0 1 2 dose\\tdaily\n", encoding="utf-8")
    assert parse_run(tmp_path / "raw.txt")[0]["ms-test-0"] == "dose daily"  # the tab the template made splits it


def test_corrections_the_rouge_package_cannot_score_are_rewritten(test_notes, tmp_path):
    golds = [GoldNote.from_note(n) for n in test_notes[:4] if n.error_flag][:2]
    run_on = " ".join(f"word{k}" for k in range(1200))
    predictions = [NotePrediction(golds[0].text_id, 1, 0, '".."'), NotePrediction(golds[1].text_id, 1, 0, run_on)]
    summary = write_submission(predictions, tmp_path / "submission.txt")
    write_reference(golds, tmp_path / "reference.csv")
    assert (summary.corrections_dropped, summary.corrections_shortened) == (1, 1)
    script = score(tmp_path / "submission.txt", tmp_path / "reference.csv")
    assert script["counters"]["system_provided_na"] == 1
    corrections = parse_run(tmp_path / "submission.txt")[0]
    assert corrections[golds[1].text_id].split() == run_on.split()[:MAX_CORRECTION_WORDS]
    (tmp_path / "raw.txt").write_text(f"{golds[0].text_id} 1 0 ..\n{golds[1].text_id} 1 0 {run_on}\n")
    with pytest.raises(ValueError, match="Hypothesis is empty"):
        score(tmp_path / "raw.txt", tmp_path / "reference.csv")
    (tmp_path / "raw.txt").write_text(f"{golds[1].text_id} 1 0 {run_on}\n")
    with pytest.raises(RecursionError):
        score(tmp_path / "raw.txt", tmp_path / "reference.csv")
