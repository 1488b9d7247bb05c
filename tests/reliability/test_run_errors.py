"""Run-stopping errors are recognised inside the Ray errors that carry them from workers to the launcher."""

from __future__ import annotations

from ray.exceptions import RayTaskError

from medical_team.judge.outage import JudgeUnavailableError
from medical_team.launcher.failures.run_errors import failure_report, one_line, run_stopping_cause
from medical_team.reliability.guards import NonFiniteTrainingError
from medical_team.run.failures import MetricsWriteError


def _through_ray(error: BaseException, hops: int) -> BaseException:
    """Wrap `error` the way Ray does when it crosses `hops` actors (worker -> trainer -> driver)."""
    for hop in range(hops):
        error = RayTaskError(f"hop{hop}", "Traceback (most recent call last):\n  ...remote frames...", error)
    return error


def test_a_judge_outage_two_actors_away_is_found_with_its_message() -> None:
    outage = JudgeUnavailableError("judge at http://127.0.0.1:8100 failed 2 consecutive batches: connection refused")
    cause = run_stopping_cause(_through_ray(outage, hops=2))
    assert cause is outage
    assert one_line(cause) == str(outage)


def test_a_non_finite_stop_raised_from_another_error_is_found() -> None:
    try:
        try:
            raise ValueError("nan loss")
        except ValueError as inner:
            raise NonFiniteTrainingError("step 7: non-finite actor/pg_loss") from inner
    except NonFiniteTrainingError as error:
        wrapped = _through_ray(error, hops=1)
    assert isinstance(run_stopping_cause(wrapped), NonFiniteTrainingError)


def test_other_errors_are_not_run_stopping() -> None:
    assert run_stopping_cause(_through_ray(KeyError("x"), hops=2)) is None


def test_a_metrics_record_the_trainer_could_not_write_ends_the_run_with_its_message() -> None:
    failure = MetricsWriteError("step 2's metrics could not be written to /x/metrics.jsonl ([Errno 28] ...)")
    assert failure_report(_through_ray(failure, hops=1)) == (f"medplay train: stopped: {failure}", 1)
