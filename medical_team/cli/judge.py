"""`medplay judge serve`: run the judge HTTP server (rules, local HF model or OpenAI-compatible backend).

`medplay judge audit` and `medplay judge reward-file` live in `judge_audit.py` and `judge_reward_file.py`.

medplay judge serve --backend rules --port 8100
medplay judge serve --backend hf --model /models/medgemma-4b-it --device cuda
medplay judge serve --backend openai --url http://127.0.0.1:8001/v1 --model medgemma
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from medical_team.cli.judge_options import JudgeOptions, judge_settings
from medical_team.common.errors import UserInputError
from medical_team.judge.access import TOKEN_ENV
from medical_team.judge.judge_kinds import JUDGE_BACKENDS, LOCAL_BACKENDS, backend_kind

if TYPE_CHECKING:
    from medical_team.judge.settings import JudgeSettings
    from medical_team.judge_server.app import ServerSettings

# The server's default backend is rules: the YAML's (vllm) is served by `medplay train`, not behind this server.
SERVE_JUDGE = JudgeOptions(LOCAL_BACKENDS, "rules", "judge backend (default: rules)")


def _server_settings(args: argparse.Namespace, judge: JudgeSettings) -> ServerSettings:
    """Where the server listens and what one request may carry; invalid values become `UserInputError`."""
    from medical_team.judge.access import judge_token
    from medical_team.judge_server.app import ServerSettings

    limits = {"max_body_bytes": args.max_body_bytes, "max_batch": args.max_batch, "max_concurrent": args.max_concurrent}
    try:
        return ServerSettings(
            host=args.host,
            port=judge.server_port if args.port is None else args.port,
            token=judge_token(),
            **{k: v for k, v in limits.items() if v is not None},
        )
    except ValueError as error:
        raise UserInputError(str(error), field="--host" if "token" in str(error) else None) from None


def run_serve(args: argparse.Namespace) -> int:
    """Build the backend (in the background), then serve until SIGINT/SIGTERM."""
    from medical_team.game.rewards import RewardConfig
    from medical_team.judge.backends import build_judge
    from medical_team.judge.scorer import JudgeScorer
    from medical_team.judge_server.app import create_app
    from medical_team.judge_server.serving import serve_forever

    judge, runtime = judge_settings(args, SERVE_JUDGE)
    server = _server_settings(args, judge)
    try:
        rewards = RewardConfig(scheme=args.reward_scheme, localisation_bonus=args.localisation_bonus)
    except ValueError as error:
        raise UserInputError(str(error), field="--reward-scheme/--localisation-bonus") from None
    if server.token is not None:
        print(f"medplay judge: requests need the bearer token of {TOKEN_ENV}", file=sys.stderr)
    scorer = JudgeScorer(lambda: build_judge(judge, runtime), rewards=rewards)
    try:
        serve_forever(create_app(server, scorer), server.host, server.port)
    except RuntimeError as error:
        raise UserInputError(str(error), field="--host/--port") from None
    return 0


def run_kind(args: argparse.Namespace) -> int:
    """Print where the backend's verdicts are made (`medplay judge kind BACKEND`)."""
    print(backend_kind(args.backend).where.value)
    return 0


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    """Register `medplay judge serve`."""
    judge = subparsers.add_parser("judge", help="the judge that settles adversarial games")
    actions = judge.add_subparsers(dest="judge_command", required=True, metavar="ACTION")
    serve = actions.add_parser("serve", help="run the judge HTTP server (loopback by default)")
    SERVE_JUDGE.add_to(serve)
    serve.add_argument(
        "--host",
        default="127.0.0.1",
        help=f"bind address (default: 127.0.0.1, loopback only; any other needs {TOKEN_ENV})",
    )
    serve.add_argument("--port", type=int, help="port (default: medplay.judge.server_port of configs/medplay.yaml)")
    serve.add_argument("--max-body-bytes", type=int, help="largest request body (413 above; default 8 MiB)")
    serve.add_argument("--max-batch", type=int, help="most games or queries per request (413 above; default 256)")
    serve.add_argument("--max-concurrent", type=int, help="most requests in flight (429 above; default 64)")
    serve.add_argument(
        "--min-length-ratio", type=float, help="rewrite/seed length below this: unfaithful (default: YAML)"
    )
    serve.add_argument(
        "--max-length-ratio", type=float, help="rewrite/seed length above this: unfaithful (default: YAML)"
    )
    serve.add_argument("--reward-scheme", default="general_sum", help="POST /judge rewards: general_sum or zero_sum")
    serve.add_argument(
        "--localisation-bonus", type=float, default=0.0, help="POST /judge: bonus for the right sentence"
    )
    serve.set_defaults(run=run_serve)
    kind = actions.add_parser(
        "kind",
        help="where a backend's verdicts are made: served-here, judge-server or in-process",
        description="Print where BACKEND's verdicts are made: served-here (a vLLM server `medplay train` starts on "
        "this GPU), judge-server (medplay's judge server at medplay.judge.url) or in-process (the trainer's "
        "workers build it). The appliance's pipeline asks this instead of reading backend names.",
    )
    kind.add_argument("backend", choices=JUDGE_BACKENDS, metavar="BACKEND", help=", ".join(JUDGE_BACKENDS))
    kind.set_defaults(run=run_kind)
    from medical_team.cli.judge_audit import add_audit_parser
    from medical_team.cli.judge_reward_file import add_reward_file_parser

    add_audit_parser(actions)
    add_reward_file_parser(actions)
