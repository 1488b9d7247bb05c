"""Reading an assessor's raw response into a benchmark prediction."""

from medical_team.evaluate.gold import GoldNote
from medical_team.evaluate.predictions import UNREADABLE_VERDICT, NotePrediction, predict_from_response

GOLD = GoldNote(
    text_id="ms-test-7",
    error_flag=True,
    error_type="pharmacotherapy",
    error_sentence_id=1,
    error_sentence="He is given vancomycin.",
    corrected_sentence="He is given ceftriaxone.",
    sentences=("Cultures grow E. coli.", "He is given vancomycin.", "He improves."),
)


def test_compliant_error_answer():
    response = (
        "Vancomycin does not cover E. coli. </think> <answer>\nverdict: ERROR\n"
        'sentence: "He is given vancomycin."\nerror_type: pharmacotherapy\ncorrection: He is given ceftriaxone.\n'
        "</answer>"
    )
    prediction = predict_from_response(response, GOLD)
    assert prediction == NotePrediction(
        text_id="ms-test-7",
        flag=1,
        sentence_id=1,
        correction="He is given ceftriaxone.",
        error_type="pharmacotherapy",
        quoted_sentence="He is given vancomycin.",
        format_violations=(),
    )
    assert not prediction.format_violation


def test_no_error_answer_predicts_minus_one():
    prediction = predict_from_response("Looks fine. </think> <answer> verdict: NO_ERROR </answer>", GOLD)
    assert (prediction.flag, prediction.sentence_id, prediction.correction) == (0, -1, None)


def test_unreadable_verdict_is_a_violation_and_has_no_flag():
    prediction = predict_from_response("I am not sure what to say", GOLD)
    assert prediction.flag is None and prediction.sentence_id is None
    assert UNREADABLE_VERDICT in prediction.format_violations
    assert "no_think_close" in prediction.format_violations


def test_format_violation_still_uses_the_verdict():
    prediction = predict_from_response("verdict: ERROR\nsentence: He improves.", GOLD)
    assert prediction.flag == 1 and prediction.sentence_id == 2
    assert prediction.format_violation and UNREADABLE_VERDICT not in prediction.format_violations


def test_json_round_trip():
    prediction = predict_from_response("x </think> <answer>verdict: ERROR\nsentence: nowhere</answer>", GOLD)
    assert prediction.sentence_id is None
    assert NotePrediction.from_json(prediction.as_json()) == prediction
