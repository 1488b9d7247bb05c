"""The MEDIQA-CORR run file: one line per note that the shared task's scorer parses and scores like eval.json."""

import re

import pytest

from medical_team.evaluate.gold import GoldNote
from medical_team.evaluate.predictions import NotePrediction
from medical_team.evaluate.scoring import score_predictions
from medical_team.evaluate.submission import RUN_LINE, run_line, submission_note, write_submission

# The shared task's scorer: its line regex, written out here independently of the product's copy.
SCORER_LINE = r"[a-z0-9\-]+\s[0-9]+\s\-?[0-9]+\s.+"


def scorer_parse(text: str) -> dict[str, tuple[str, str, str]]:
    """text_id -> (flag, sentence id, correction) as the shared task's scorer reads a run file."""
    parsed = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or not re.fullmatch(SCORER_LINE, line):
            continue
        items = re.sub(r"\s+", " ", line).split()
        correction = " ".join(items[3:]).strip().strip('"')
        parsed[items[0]] = (items[1], items[2], "NA" if items[1] == "0" else correction)
    return parsed


def test_lines_for_each_kind_of_answer():
    error = NotePrediction("ms-test-0", 1, 3, "Start\n  ceftriaxone.\r\n", "treatment", "q")
    assert run_line(error) == "ms-test-0 1 3 Start ceftriaxone."
    assert run_line(NotePrediction("ms-test-1", 0, -1, None)) == "ms-test-1 0 -1 NA"
    assert run_line(NotePrediction("ms-test-2", None, None, None, format_violations=("x",))) == "ms-test-2 0 -1 NA"
    assert run_line(NotePrediction("ms-test-3", 1, None, "Give aspirin.")) == "ms-test-3 1 -1 Give aspirin."
    assert run_line(NotePrediction("ms-test-4", 1, 0, "  ")) == "ms-test-4 1 0 NA"
    assert RUN_LINE.pattern == SCORER_LINE


def test_full_benchmark_file_parses_and_scores_like_eval_json(test_notes, tmp_path):
    """Readable predictions for every note (right, wrong, clean, unresolved): the scorer's accuracies equal ours."""
    golds = [GoldNote.from_note(n) for n in test_notes]
    predictions = []
    for k, gold in enumerate(golds):
        if k % 3 == 0:  # the reference answer, correction spread over two lines
            correction = (gold.corrected_sentence or "").replace(" ", "\n", 1) or None
            predictions.append(NotePrediction(gold.text_id, int(gold.error_flag), gold.error_sentence_id, correction))
        elif k % 3 == 1:
            predictions.append(NotePrediction(gold.text_id, 0, -1, None))
        else:  # always error, last sentence
            predictions.append(NotePrediction(gold.text_id, 1, gold.last_sentence_id, gold.sentences[-1]))
    path = tmp_path / "submission.txt"
    summary = write_submission(predictions, path)
    lines = path.read_text(encoding="utf-8").splitlines()
    assert summary.lines == len(lines) == len(golds) == 597
    assert all(re.fullmatch(SCORER_LINE, line) for line in lines)
    parsed = scorer_parse(path.read_text(encoding="utf-8"))
    assert list(parsed) == [g.text_id for g in golds]
    flags = sum(parsed[g.text_id][0] == str(int(g.error_flag)) for g in golds) / len(golds)
    sentences = sum(parsed[g.text_id][1] == str(g.error_sentence_id) for g in golds) / len(golds)
    ours = score_predictions(golds, predictions)
    assert flags == pytest.approx(ours["error_flag_accuracy"])
    assert sentences == pytest.approx(ours["error_sentence_accuracy"])
    reference = {g.text_id: " ".join((g.corrected_sentence or "NA").split()) for g in golds}
    assert sum(parsed[t][2] == reference[t] for t in parsed) >= len(golds) // 3


def test_console_note_names_what_the_scorer_treats_differently(tmp_path):
    predictions = [NotePrediction("ms-test-0", None, None, None), NotePrediction("MS_Test_1", 0, -1, None)]
    summary = write_submission(predictions, tmp_path / "submission.txt")
    assert summary.unreadable_as_no_error == 1 and summary.invalid_text_ids == ("MS_Test_1",)
    note = submission_note(summary, tmp_path / "submission.txt")
    assert "1 answers without a readable verdict written as `0 -1 NA`" in note
    assert "'MS_Test_1'" in note and "skips those lines" in note
