"""The MEDIQA-CORR run file: one line per note that the shared task's scorer parses and scores like eval.json."""

import re

import pytest
from mediqa_corr_2024 import LINE_PATTERN, parse_run

from medical_team.evaluate.gold import GoldNote
from medical_team.evaluate.predictions import NotePrediction
from medical_team.evaluate.scoring import score_predictions
from medical_team.evaluate.submission import RUN_LINE, run_line, submission_note, write_submission


def test_lines_for_each_kind_of_answer():
    error = NotePrediction("ms-test-0", 1, 3, "Start\n  ceftriaxone.\r\n", "treatment", "q")
    assert run_line(error) == "ms-test-0 1 3 Start ceftriaxone."
    assert run_line(NotePrediction("ms-test-1", 0, -1, None)) == "ms-test-1 0 -1 NA"
    assert run_line(NotePrediction("ms-test-2", None, None, None, format_violations=("x",))) == "ms-test-2 0 -1 NA"
    assert run_line(NotePrediction("ms-test-3", 1, None, "Give aspirin.")) == "ms-test-3 1 -1 Give aspirin."
    assert run_line(NotePrediction("ms-test-4", 1, 0, "  ")) == "ms-test-4 1 0 NA"
    assert run_line(NotePrediction("ms-test-5", 1, 0, "5\\mg \\1\\t")) == "ms-test-5 1 0 5\\\\mg \\\\1\\\\t"
    assert run_line(NotePrediction("ms-test-6", 1, 0, ' "." ')) == "ms-test-6 1 0 NA"
    assert RUN_LINE.pattern == LINE_PATTERN


def test_full_benchmark_file_parses_and_scores_like_eval_json(test_notes, tmp_path):
    """Readable predictions whose quotes all match a sentence (right, wrong, clean): the scorer's accuracies equal ours.

    A quote that matches no sentence (written -1) and an unreadable verdict (written `0 -1 NA`) are where
    the two part: test_official_scorer.py counts them.
    """
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
    assert all(re.fullmatch(LINE_PATTERN, line) for line in lines)
    corrections, flags, sentence_ids, skipped = parse_run(path)
    assert skipped == 0 and list(flags) == [g.text_id for g in golds]
    ours = score_predictions(golds, predictions)
    assert sum(flags[g.text_id] == str(int(g.error_flag)) for g in golds) / 597 == pytest.approx(
        ours["error_flag_accuracy"]
    )
    assert sum(sentence_ids[g.text_id] == str(g.error_sentence_id) for g in golds) / 597 == pytest.approx(
        ours["error_sentence_accuracy"]
    )
    reference = {g.text_id: " ".join((g.corrected_sentence or "NA").split()) for g in golds}
    assert sum(corrections[t] == reference[t] for t in corrections) >= len(golds) // 3


def test_console_note_names_what_the_scorer_treats_differently(tmp_path):
    predictions = [
        NotePrediction("ms-test-0", None, None, None),
        NotePrediction("MS_Test_1", 0, -1, None),
        NotePrediction("ms-test-2", 1, 0, "dose \\m"),
        NotePrediction("ms-test-3", 1, 0, "..."),
    ]
    summary = write_submission(predictions, tmp_path / "submission.txt")
    assert summary.unreadable_as_no_error == 1 and summary.invalid_text_ids == ("MS_Test_1",)
    note = submission_note(summary, tmp_path / "submission.txt")
    assert "1 answers without a readable verdict written as `0 -1 NA`" in note
    assert "'MS_Test_1'" in note and "skips those lines" in note
    assert "1 corrections with backslashes doubled" in note and "1 corrections of only dots written as `NA`" in note
