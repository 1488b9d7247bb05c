"""A Ray actor of the run whose process dies (the rollout server, an agent-loop worker, ...) ends the run, naming it.

verl 0.9.1 does not end a run when one of its actors dies. An agent-loop worker SIGKILLed during step 2 left the
trainer waiting in its replay buffer for rows that never came, for good; a SIGKILLed rollout server failed the step's
games and ended the run with verl's own replay-buffer error ("... no materializable trajectories"), which names
neither the server nor its death.

While verl's run lasts (`ends_on_dead_actor`, around the task runner's run: launcher/ppo_run.py), a daemon thread reads
this Ray job's actors from Ray's control store (GCS) every POLL_S seconds: about a millisecond a read, without Ray's
dashboard, which the CPU profile leaves off and Ray's state API needs. An actor that Ray records dead because its worker
process or its node died (reasons WORKER_DIED, NODE_DIED) ends the run. The launcher's main thread, blocked in `ray.get`
on verl's task runner, is interrupted (SIGUSR2; Ray lets only a KeyboardInterrupt out of a signal handler while it
blocks) and leaves with `ActorProcessDiedError`, so Ray shuts down and the run's shared memory is cleaned up as usual; a
run whose main thread failed first (the rollout server's case) is checked once more and fails with the same error. If
the process has not ended GIVE_UP_AFTER_S after the death was seen, the watching thread ends it with the same line.

Actors shut down at the end of a run are not deaths: Ray records those as OUT_OF_SCOPE, OWNER_DIED or RAY_KILL, and
the watch stops when the task runner's run returns, before Ray shuts down. A worker that Ray's memory monitor killed
for host RAM carries Ray's out-of-memory context instead and is reported by `out_of_memory.py`.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from medical_team.run.failures import ActorProcessDiedError
from medical_team.run_folder.checkpoint_folder import last_checkpoint
from medical_team.run_folder.metrics_records import read_step_records

POLL_S = 2.0
GIVE_UP_AFTER_S = 30.0
UNEXPECTED_REASONS = ("WORKER_DIED", "NODE_DIED")  # ray's ActorDiedErrorContext.Reason names of a death
# What each of verl's actor classes is to the user, by a part of its class name (medplay's subclasses keep it).
ROLES = (
    ("vLLMHttpServer", "the rollout server"),
    ("AgentLoopWorker", "an agent-loop worker"),
    ("TaskRunner", "verl's trainer"),
    ("WorkerDict", "a worker of the actor and reference engines"),
    ("RewardLoopWorker", "a reward-loop worker"),
)
# Ray's explanation of a dead worker goes on with a paragraph of guesses ("(1) the process was killed by the OOM
# killer ..."): the line keeps what Ray knows.
RAY_GUESSES = " Some common causes include"


def role_of(class_name: str) -> str:
    """How the line names an actor of `class_name`."""
    return next((role for part, role in ROLES if part in class_name), "a Ray actor of the run")


def unexpected_deaths(job_id: Any) -> list[dict[str, Any]]:
    """This job's actors that Ray records dead because their process or node died, earliest first.

    `ray._private.state.actors` reads Ray's control store directly (docs/verl-integration.md); Ray's public
    `ray.util.state.list_actors` asks the dashboard, which a run may leave off.
    """
    import ray
    from ray.core.generated.common_pb2 import ActorDiedErrorContext

    dead = []
    for actor in ray._private.state.actors(job_id=job_id, actor_state_name="DEAD").values():
        cause = actor.get("DeathCause")
        if cause is None or cause.WhichOneof("context") != "actor_died_error_context":
            continue
        if ActorDiedErrorContext.Reason.Name(cause.actor_died_error_context.reason) in UNEXPECTED_REASONS:
            dead.append(actor)
    return sorted(dead, key=lambda actor: actor.get("EndTime") or 0)


def death_line(dead: list[dict[str, Any]], metrics_file: Path, checkpoint_dir: Path) -> str:
    """What ended the run: the first dead actor by role, class and pid, the step, Ray's reason, and what is kept."""
    first = dead[0]
    context = first["DeathCause"].actor_died_error_context
    reason = context.error_message.split(RAY_GUESSES)[0].strip().rstrip(".") or "its process died"
    class_name = first.get("ActorClassName") or context.class_name
    others = f"; {len(dead) - 1} other actor(s) of the run died too" if len(dead) > 1 else ""
    kept = last_checkpoint(checkpoint_dir)
    kept = f"the last checkpoint is intact: {kept}" if kept else "no checkpoint was saved yet"
    return (
        f"{role_of(class_name)} (Ray actor {class_name}, pid {first.get('Pid') or context.pid}) died "
        f"{_when(metrics_file)}: {reason}{others}; {kept}"
    )


def _when(metrics_file: Path) -> str:
    """The step in progress, after the last one in the metrics file."""
    try:
        last = read_step_records(metrics_file).last_step
    except Exception:  # noqa: BLE001 - no file yet, or one being written: the line names no step then
        last = None
    return "before step 1 ended" if last is None else f"during step {last + 1}"


class _ActorDied(KeyboardInterrupt):
    """Raised in the launcher's main thread when an actor's process died (see the module's docstring)."""


class ActorWatch:
    """Reads the job's dead actors every `poll_s` seconds; at the first death, records it and ends the run."""

    def __init__(
        self,
        job_id: Any,
        metrics_file: Path,
        checkpoint_dir: Path,
        give_up: Callable[[ActorProcessDiedError], None],
        *,
        poll_s: float = POLL_S,
        give_up_after_s: float = GIVE_UP_AFTER_S,
    ) -> None:
        self.job_id, self.metrics_file, self.checkpoint_dir = job_id, metrics_file, checkpoint_dir
        self.give_up, self.poll_s, self.give_up_after_s = give_up, poll_s, give_up_after_s
        self.found: ActorProcessDiedError | None = None
        self._main_thread = threading.main_thread().ident
        self._armed = True  # the main thread is inside the watched block
        self._lock = threading.Lock()
        self._stopped = threading.Event()

    def start(self) -> None:
        threading.Thread(target=self._watch, name="dead-actor-watch", daemon=True).start()

    def check(self) -> ActorProcessDiedError | None:
        """The death seen so far, or one read now."""
        if self.found is None:
            dead = unexpected_deaths(self.job_id)
            if dead:
                self.found = ActorProcessDiedError(death_line(dead, self.metrics_file, self.checkpoint_dir))
        return self.found

    def stop(self) -> None:
        """The main thread left the block: no interrupt from here on."""
        with self._lock:
            self._armed = False
        self._stopped.set()

    def interrupt(self, _signum: int, _frame: object) -> None:
        """SIGUSR2's handler in the main thread."""
        if self._armed:
            raise _ActorDied

    def _watch(self) -> None:
        while not self._stopped.wait(self.poll_s):
            try:
                found = self.check()
            except Exception:  # noqa: BLE001, S112 - Ray shutting down under the watch: the main thread reports the run
                continue
            if found is None:
                continue
            with self._lock:
                if self._armed and self._main_thread is not None:  # else the main thread left and reports the run
                    deadline = threading.Timer(self.give_up_after_s, self.give_up, args=(found,))
                    deadline.daemon = True
                    deadline.start()
                    signal.pthread_kill(self._main_thread, signal.SIGUSR2)
            return


def _death_seen(watch: ActorWatch) -> ActorProcessDiedError | None:
    """The watch's death, read once more; None when Ray cannot be read (the block's own error is reported then)."""
    try:
        return watch.check()
    except Exception:  # noqa: BLE001 - the error being reported must not be replaced by Ray's
        return None


def _give_up(error: ActorProcessDiedError) -> None:
    """End the process with the line the main thread would have said (it did not end the run in time)."""
    from medical_team.launcher.failures.run_errors import end_run, failure_report

    end_run(*failure_report(error))


@contextmanager
def ends_on_dead_actor(
    metrics_file: Path, checkpoint_dir: Path, give_up: Callable[[ActorProcessDiedError], None] = _give_up
) -> Iterator[ActorWatch]:
    """Watch this Ray job's actors inside the block (Ray started); leave it with ActorProcessDiedError if one died.

    An error of the block becomes the death's error when an actor's process died and the error is not one that stops
    the run on purpose (run_errors.RUN_STOPPING_ERRORS): a dead rollout server fails verl's step with an error of
    its own first.
    """
    import ray

    from medical_team.launcher.failures.run_errors import run_stopping_cause

    watch = ActorWatch(ray.get_runtime_context().job_id, metrics_file, checkpoint_dir, give_up)
    previous = signal.signal(signal.SIGUSR2, watch.interrupt)
    watch.start()
    try:
        yield watch
    except KeyboardInterrupt:  # ours arrives as a plain KeyboardInterrupt when Ray's `ray.get` was blocking
        watch.stop()
        if watch.found is None:  # the judge's or SIGTERM's interrupt (served_judge.py, graceful_stop.py)
            raise
        raise watch.found from None
    except Exception as error:
        watch.stop()
        if run_stopping_cause(error) is not None or _death_seen(watch) is None:
            raise
        raise watch.found from error
    finally:
        watch.stop()
        signal.signal(signal.SIGUSR2, previous)
