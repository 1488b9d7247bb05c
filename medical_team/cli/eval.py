"""`medplay eval --model PATH --output DIR`: score a model as assessor on the MEDEC benchmark (MEDIQA-CORR 2024).

`medplay eval --crossplay CKPT_A CKPT_B ... --output DIR`: the cross-play league of those checkpoints
(every attacker against every assessor on the val split's games; see docs/evaluation.md).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from medical_team.cli.generation_options import add_generation_options, generation_settings, load_error, positive
from medical_team.cli.judge_options import JudgeOptions
from medical_team.common.errors import UserInputError
from medical_team.judge.judge_kinds import REACHABLE_BACKENDS

if TYPE_CHECKING:
    from medical_team.evaluate.crossplay import Checkpoint
    from medical_team.evaluate.generation import GenerationSettings
    from medical_team.evaluate.gold import GoldNote
    from medical_team.game.batch import Generator
    from medical_team.game.judging import Judge

# The league's fixed judge: the judge commands' options, as --judge, --judge-model, --judge-url, --judge-api-key-env.
LEAGUE_JUDGE = JudgeOptions(
    REACHABLE_BACKENDS,
    "rules",
    "--crossplay judge backend (default rules)",
    backend_flag="--judge",
    prefix="--judge-",
    noun="judge",
    endpoint="its endpoint address",
    runtime=False,
)


def run(args: argparse.Namespace) -> int:
    """Score one model on the benchmark (`--model`) or play a cross-play league (`--crossplay`)."""
    positive("--limit", args.limit)
    generation_settings(args)  # checks --batch-size and --max-new-tokens before anything loads
    if args.crossplay is not None:
        return run_crossplay(args)
    if args.responses is not None:
        return run_validation_answers(args)
    return run_benchmark(args)


def run_benchmark(args: argparse.Namespace) -> int:
    """Load the benchmark and the model, generate, score, write DIR/eval.json and DIR/eval.md, print the comparison."""
    from medical_team.evaluate.benchmark import load_benchmark
    from medical_team.evaluate.evaluation import evaluate
    from medical_team.evaluate.generation import choose_backend, make_generator
    from medical_team.evaluate.model_source import resolve_model

    benchmark = load_benchmark(args.benchmark).head(args.limit)
    for reason, count in benchmark.skipped.items():
        print(f"benchmark: skipped {count} rows: {reason}")
    model = resolve_model(args.model)
    backend = choose_backend(args.backend)
    settings = generation_settings(args)
    print(f"evaluating {model} with {backend} on {len(benchmark.golds)} notes of {benchmark.source}")
    started = time.perf_counter()
    try:
        generator = make_generator(model, backend, settings)
    except (OSError, ValueError) as error:
        raise load_error(error, model, "--model") from None
    load_seconds = round(time.perf_counter() - started, 1)  # vLLM's engine start; not in generation.seconds
    about = {"model": str(args.model), "resolved_model": str(model), "backend": backend, "load_seconds": load_seconds}
    result, responses = evaluate(generator, benchmark, settings, about)
    _write_and_report(result, responses, benchmark.golds, Path(args.output))
    return 0


def run_validation_answers(args: argparse.Namespace) -> int:
    """Score the answers a trainer's validation wrote (`--responses`) as a model's answers are scored; write DIR."""
    from medical_team.evaluate.evaluation import score_validation_answers

    result, responses, benchmark = score_validation_answers(Path(args.responses))
    print(f"scoring {len(responses)} answers of {result['model']} on {benchmark.source} ({args.responses})")
    _write_and_report(result, responses, benchmark.golds, Path(args.output))
    return 0


def _write_and_report(result: dict[str, Any], responses: list[str], golds: list[GoldNote], output: Path) -> None:
    """Write the eval folder and print its table and where every file went."""
    from medical_team.evaluate.evaluation import EVAL_JSON, EVAL_MD, write_outputs
    from medical_team.evaluate.official import REFERENCE_CSV
    from medical_team.evaluate.submission import SUBMISSION_TXT, submission_note
    from medical_team.evaluate.summary import console_table

    submission = write_outputs(result, responses, golds, output)
    print(console_table(result))
    print(
        f"format violation rate {result['format_violation_rate']:.3f}; wrote {output / EVAL_JSON} and {output / EVAL_MD}"
    )
    print(submission_note(submission, output / SUBMISSION_TXT))
    print(f"wrote {output / REFERENCE_CSV}: the reference of these {len(golds)} notes for the official script")


def _checkpoints(given: list[str]) -> list[Checkpoint]:
    """The league's entrants in the order given, resolved like `--model`, labelled by folder name (made unique)."""
    from medical_team.evaluate.crossplay import Checkpoint
    from medical_team.evaluate.model_source import resolve_model

    if len(given) < 2:
        raise UserInputError(f"a cross-play league needs at least 2 checkpoints, got {len(given)}", field="--crossplay")
    resolved = [resolve_model(path, field="--crossplay") for path in given]
    names = [Path(path).expanduser().name or path for path in given]
    labels = [name if names.count(name) == 1 else f"{k}:{name}" for k, name in enumerate(names)]
    return [Checkpoint(label, path, model) for label, path, model in zip(labels, given, resolved, strict=True)]


def _judge(args: argparse.Namespace) -> tuple[Judge, str]:
    """The fixed judge of the league and its description; the rules judge unless another is named."""
    chosen = LEAGUE_JUDGE.choice(args)
    from medical_team.evaluate.generation import gpu_available
    from medical_team.judge.backends import Runtime, build_judge
    from medical_team.judge.settings import packaged_judge_settings

    settings = packaged_judge_settings(**chosen.given())
    runtime = Runtime(
        api_key=chosen.api_key, device="cuda" if chosen.kind.loads_a_model_here and gpu_available() else "cpu"
    )
    try:
        judge = build_judge(settings, runtime)
    except (OSError, ValueError) as error:
        raise UserInputError(f"cannot build the judge: {' '.join(str(error).split())}", field="--judge") from None
    where = " ".join(str(part) for part in (args.judge_model, args.judge_url) if part)
    return judge, f"{args.judge} ({where})" if where else args.judge


def _loader(backend: str, settings: GenerationSettings):
    """Loads one league checkpoint with the eval's generator; a load failure is a user error naming it."""
    from medical_team.evaluate.generation import make_generator

    def load(model: Path | str) -> Generator:
        try:
            return make_generator(model, backend, settings)
        except (OSError, ValueError) as error:
            raise load_error(error, model, "--crossplay") from None

    return load


def run_crossplay(args: argparse.Namespace) -> int:
    """Play every checkpoint's attacker against every checkpoint's assessor; write the matrices to DIR."""
    from medical_team.evaluate.crossplay import play_league
    from medical_team.evaluate.crossplay_report import CROSSPLAY_JSON, CROSSPLAY_MD, CROSSPLAY_PNG, write_league
    from medical_team.evaluate.generation import choose_backend
    from medical_team.evaluate.league_seeds import load_league_seeds

    checkpoints = _checkpoints(args.crossplay)
    output = Path(args.output)
    if output.exists() and not output.is_dir():
        raise UserInputError("exists and is not a directory", file=str(output), field="--output")
    seeds = load_league_seeds(args.seeds).head(args.limit)
    judge, judge_name = _judge(args)
    backend = choose_backend(args.backend)
    settings = generation_settings(args)
    n = len(checkpoints)
    print(
        f"cross-play league: {n} checkpoints, {n * n} cells x {len(seeds.seeds)} games of {seeds.source}; "
        f"judge {judge_name}; backend {backend}"
    )

    def progress(cell) -> None:
        record = cell.record()
        print(
            f"attacker {checkpoints[cell.attacker].label} vs assessor {checkpoints[cell.assessor].label}: "
            f"attacker success {record['attacker_success_rate']:.3f}, assessor accuracy {record['assessor_accuracy']:.3f}"
        )

    league = play_league(checkpoints, seeds, judge, _loader(backend, settings), on_cell=progress)
    about = {
        "backend": backend,
        "judge": judge_name,
        "decoding": "greedy",
        "max_new_tokens": args.max_new_tokens,
        "native_thinking": args.native_thinking,
        "limit": args.limit,
    }
    write_league(league, output, about)
    names = ", ".join(str(output / name) for name in (CROSSPLAY_JSON, CROSSPLAY_MD, CROSSPLAY_PNG))
    print(f"wrote {names} and the games to crossplay_games.jsonl")
    return 0


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    """Register `medplay eval`."""
    parser = subparsers.add_parser(
        "eval",
        help="score a model as assessor on the MEDEC benchmark, or play a cross-play league of checkpoints",
        description="--model: write DIR/eval.json, DIR/eval.md, DIR/responses.jsonl, DIR/submission.txt "
        "(MEDIQA-CORR run format) and DIR/reference.csv (its reference for the official script). --crossplay: play the attacker of every checkpoint against the assessor of "
        "every checkpoint (diagonal included) and write DIR/crossplay.json, .md, .png and crossplay_games.jsonl. "
        "Nothing is downloaded.",
    )
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument("--model", help="HF model folder, verl checkpoint folder (with an HF export), or cached hub id")
    which.add_argument(
        "--responses",
        metavar="FOLDER",
        help="score the answers a trainer's validation on the benchmark wrote (<medplay.validation_dir>/step_<N>/: "
        "responses.jsonl and validation.json) exactly as a model's answers are scored; no model is loaded",
    )
    which.add_argument(
        "--crossplay",
        nargs="+",
        metavar="CKPT",
        help="two or more checkpoints (like --model), oldest first: play each attacker against each assessor",
    )
    parser.add_argument("--output", required=True, help="directory for the output files")
    parser.add_argument(
        "--benchmark", help="benchmark.parquet from `medplay convert`, or a MEDEC CSV (default: bundled MEDEC-MS test)"
    )
    parser.add_argument("--limit", type=int, help="evaluate only the first N notes (--crossplay: the first N games)")
    parser.add_argument(
        "--seeds",
        help="--crossplay games: a game parquet (val.parquet of `medplay convert`) or a MEDEC CSV, whose val split "
        "is drawn as `medplay convert` draws it (default: the bundled MEDEC-MS validation file's val split)",
    )
    LEAGUE_JUDGE.add_to(parser)
    add_generation_options(parser)
    parser.set_defaults(run=run)
