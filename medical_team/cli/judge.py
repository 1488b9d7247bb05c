"""`medplay judge serve`: run the judge HTTP server (rules, local HF model or OpenAI-compatible backend).

`medplay judge audit` and `medplay judge reward-file` live in `judge_audit.py` and `judge_reward_file.py`.

medplay judge serve --backend rules --port 8100
medplay judge serve --backend hf --model /models/medgemma-4b-it --device cuda
medplay judge serve --backend openai --base-url http://127.0.0.1:8001/v1 --model medgemma
"""

from __future__ import annotations

import argparse
import ipaddress
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from medical_team.errors import UserInputError

if TYPE_CHECKING:
    from medical_team.judge.app import ServerSettings
    from medical_team.judge.backends import BackendSettings
    from medical_team.judge.rules import RuleSettings

BACKEND_CHOICES = ("rules", "hf", "openai")


def _is_loopback(host: str) -> bool:
    """True for addresses only this machine can reach."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_args(args: argparse.Namespace) -> None:
    """Reject option combinations that cannot work, naming the option."""
    if args.backend == "openai" and not args.base_url:
        raise UserInputError("backend 'openai' needs the endpoint, e.g. http://127.0.0.1:8001/v1", field="--base-url")
    if args.backend == "openai" and not args.model:
        raise UserInputError("backend 'openai' needs the served model name", field="--model")
    if args.base_url and not args.base_url.startswith(("http://", "https://")):
        raise UserInputError(f"{args.base_url!r} is not an http(s) URL", field="--base-url")
    looks_like_path = bool(args.model) and args.model.startswith(("/", ".", "~"))
    if args.backend == "hf" and looks_like_path and not Path(args.model).expanduser().is_dir():
        raise UserInputError(f"model directory {args.model} does not exist", field="--model")
    if args.api_key_env and not os.environ.get(args.api_key_env):
        raise UserInputError(f"environment variable {args.api_key_env} is not set", field="--api-key-env")


def backend_settings(args: argparse.Namespace, rules: RuleSettings | None = None) -> BackendSettings:
    """The backend the judge options name (checked first); one fully failed batch counts as a failure."""
    from medical_team.judge.backends import BackendSettings
    from medical_team.judge.rules import RuleSettings

    check_args(args)
    return BackendSettings(
        backend=args.backend,
        model=args.model,
        base_url=args.base_url,
        api_key=os.environ.get(args.api_key_env) if args.api_key_env else None,
        device=args.device,
        dtype=args.dtype,
        local_files_only=not args.allow_download,
        max_new_tokens=args.max_new_tokens,
        batch_size=args.batch_size,
        # behind the server a fully failed batch answers 503, so the client retries and counts it
        max_consecutive_failures=1,
        rules=rules or RuleSettings(),
    )


def _settings(args: argparse.Namespace) -> tuple[ServerSettings, BackendSettings]:
    """Server and backend settings from the options; invalid values become `UserInputError`."""
    from medical_team.judge.app import ServerSettings
    from medical_team.judge.rules import RuleSettings

    try:
        rules = RuleSettings(min_length_ratio=args.min_length_ratio, max_length_ratio=args.max_length_ratio)
        server = ServerSettings(
            host=args.host, port=args.port, max_body_bytes=args.max_body_bytes, max_batch=args.max_batch
        )
    except ValueError as error:
        raise UserInputError(str(error)) from None
    return server, backend_settings(args, rules)


def run_serve(args: argparse.Namespace) -> int:
    """Build the backend (in the background), then serve until SIGINT/SIGTERM."""
    check_args(args)
    from medical_team.game.rewards import RewardConfig
    from medical_team.judge.app import create_app
    from medical_team.judge.backends import build_judge
    from medical_team.judge.scorer import JudgeScorer
    from medical_team.judge.serving import serve_forever

    server, backend = _settings(args)
    try:
        rewards = RewardConfig(scheme=args.reward_scheme, localisation_bonus=args.localisation_bonus)
    except ValueError as error:
        raise UserInputError(str(error), field="--reward-scheme/--localisation-bonus") from None
    if not _is_loopback(server.host):
        print(f"medplay judge: warning: listening on {server.host}, reachable from other machines", file=sys.stderr)
    scorer = JudgeScorer(lambda: build_judge(backend), rewards=rewards)
    try:
        serve_forever(create_app(server, scorer), server.host, server.port)
    except RuntimeError as error:
        raise UserInputError(str(error), field="--host/--port") from None
    return 0


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    """Register `medplay judge serve`."""
    judge = subparsers.add_parser("judge", help="the judge that settles adversarial games")
    actions = judge.add_subparsers(dest="judge_command", required=True, metavar="ACTION")
    serve = actions.add_parser("serve", help="run the judge HTTP server (loopback by default)")
    serve.add_argument("--backend", choices=BACKEND_CHOICES, default="rules", help="judge backend (default: rules)")
    serve.add_argument("--host", default="127.0.0.1", help="bind address (default: 127.0.0.1, loopback only)")
    serve.add_argument("--port", type=int, default=8100, help="port (default: 8100)")
    serve.add_argument("--model", help="hf: local path or cached hub id (default google/medgemma-4b-it); openai: model")
    serve.add_argument("--base-url", help="openai: endpoint base URL including /v1")
    serve.add_argument("--api-key-env", help="openai: name of the environment variable that holds the API key")
    serve.add_argument("--device", default="cpu", help="hf: torch device (default: cpu)")
    serve.add_argument("--dtype", default="auto", help="hf: torch dtype, e.g. bfloat16 (default: auto)")
    serve.add_argument("--allow-download", action="store_true", help="hf: allow downloading the model from the hub")
    serve.add_argument("--max-new-tokens", type=int, default=128, help="tokens the judge model may write")
    serve.add_argument("--batch-size", type=int, default=16, help="games per model call (openai: parallel requests)")
    serve.add_argument("--max-body-bytes", type=int, default=8 * 1024 * 1024, help="largest request body (413 above)")
    serve.add_argument("--max-batch", type=int, default=256, help="most games or queries per request (413 above)")
    serve.add_argument("--min-length-ratio", type=float, default=0.5, help="rewrite/seed length below this: unfaithful")
    serve.add_argument("--max-length-ratio", type=float, default=2.0, help="rewrite/seed length above this: unfaithful")
    serve.add_argument("--reward-scheme", default="general_sum", help="POST /judge rewards: general_sum or zero_sum")
    serve.add_argument(
        "--localisation-bonus", type=float, default=0.0, help="POST /judge: bonus for the right sentence"
    )
    serve.set_defaults(run=run_serve)
    from medical_team.cli.judge_audit import add_audit_parser
    from medical_team.cli.judge_reward_file import add_reward_file_parser

    add_audit_parser(actions)
    add_reward_file_parser(actions)
