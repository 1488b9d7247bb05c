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

from medical_team.cli.arg_types import int_at_least
from medical_team.errors import UserInputError
from medical_team.judge.settings import LOCAL_BACKENDS
from medical_team.judge_kinds import JUDGE_BACKENDS, backend_kind

if TYPE_CHECKING:
    from medical_team.judge.app import ServerSettings
    from medical_team.judge.backends import Runtime
    from medical_team.judge.settings import JudgeSettings

# The server's default backend: the YAML's (vllm) is served by `medplay train`, not behind this server.
SERVER_DEFAULT_BACKEND = "rules"
# An endpoint backend's fields, the option that sets each, and what it is.
NEEDED_OPTIONS = (
    ("base_url", "--base-url", "the endpoint, e.g. http://127.0.0.1:8001/v1"),
    ("model", "--model", "the served model name"),
)


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
    kind = backend_kind(args.backend)
    for field, option, what in NEEDED_OPTIONS:
        if field in kind.needs and not kind.reads_a_model_folder and not getattr(args, field):
            raise UserInputError(f"backend {kind.name!r} needs {what}", field=option)
    if args.base_url and not args.base_url.startswith(("http://", "https://")):
        raise UserInputError(f"{args.base_url!r} is not an http(s) URL", field="--base-url")
    looks_like_path = bool(args.model) and args.model.startswith(("/", ".", "~"))
    if kind.reads_a_model_folder and looks_like_path and not Path(args.model).expanduser().is_dir():
        raise UserInputError(f"model directory {args.model} does not exist", field="--model")
    if args.api_key_env and not os.environ.get(args.api_key_env):
        raise UserInputError(f"environment variable {args.api_key_env} is not set", field="--api-key-env")


def judge_settings(args: argparse.Namespace) -> tuple[JudgeSettings, Runtime]:
    """configs/medplay.yaml's `medplay.judge` with the options given, both checked, and how to run it here."""
    from medical_team.judge.backends import Runtime
    from medical_team.judge.settings import packaged_judge_settings

    check_args(args)
    given = {
        "backend": args.backend,
        "model": args.model,
        "base_url": args.base_url,
        "batch_size": args.batch_size,
        "min_length_ratio": getattr(args, "min_length_ratio", None),
        "max_length_ratio": getattr(args, "max_length_ratio", None),
        "serve": {"max_tokens": args.max_new_tokens} if args.max_new_tokens is not None else None,
    }
    # behind the server a fully failed batch answers 503, so the client retries and counts it
    settings = packaged_judge_settings(max_consecutive_failures=1, **{k: v for k, v in given.items() if v is not None})
    runtime = Runtime(
        api_key=os.environ.get(args.api_key_env) if args.api_key_env else None,
        device=args.device,
        dtype=args.dtype,
        local_files_only=not args.allow_download,
    )
    return settings, runtime


def _server_settings(args: argparse.Namespace, judge: JudgeSettings) -> ServerSettings:
    """Where the server listens and what one request may carry; invalid values become `UserInputError`."""
    from medical_team.judge.app import ServerSettings

    limits = {"max_body_bytes": args.max_body_bytes, "max_batch": args.max_batch}
    try:
        return ServerSettings(
            host=args.host,
            port=judge.server_port if args.port is None else args.port,
            **{k: v for k, v in limits.items() if v is not None},
        )
    except ValueError as error:
        raise UserInputError(str(error)) from None


def run_serve(args: argparse.Namespace) -> int:
    """Build the backend (in the background), then serve until SIGINT/SIGTERM."""
    from medical_team.game.rewards import RewardConfig
    from medical_team.judge.app import create_app
    from medical_team.judge.backends import build_judge
    from medical_team.judge.scorer import JudgeScorer
    from medical_team.judge.serving import serve_forever

    judge, runtime = judge_settings(args)
    server = _server_settings(args, judge)
    try:
        rewards = RewardConfig(scheme=args.reward_scheme, localisation_bonus=args.localisation_bonus)
    except ValueError as error:
        raise UserInputError(str(error), field="--reward-scheme/--localisation-bonus") from None
    if not _is_loopback(server.host):
        print(f"medplay judge: warning: listening on {server.host}, reachable from other machines", file=sys.stderr)
    scorer = JudgeScorer(lambda: build_judge(judge, runtime), rewards=rewards)
    try:
        serve_forever(create_app(server, scorer), server.host, server.port)
    except RuntimeError as error:
        raise UserInputError(str(error), field="--host/--port") from None
    return 0


def add_backend_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of an in-process judge backend; unset ones take configs/medplay.yaml's `medplay.judge` values."""
    parser.add_argument("--model", help="hf: local path or cached hub id (default: medplay.judge.model); openai: model")
    parser.add_argument("--base-url", help="openai: endpoint base URL including /v1")
    parser.add_argument("--api-key-env", help="openai: name of the environment variable that holds the API key")
    parser.add_argument("--device", default="cpu", help="hf: torch device (default: cpu)")
    parser.add_argument("--dtype", default="auto", help="hf: torch dtype, e.g. bfloat16 (default: auto)")
    parser.add_argument("--allow-download", action="store_true", help="hf: allow downloading the model from the hub")
    parser.add_argument(
        "--max-new-tokens",
        type=int_at_least(1),
        help="tokens the judge model may write (default: judge.serve.max_tokens)",
    )
    parser.add_argument(
        "--batch-size",
        type=int_at_least(1),
        help="requests per model call (openai: parallel; default: judge.batch_size)",
    )


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    """Register `medplay judge serve`."""
    judge = subparsers.add_parser("judge", help="the judge that settles adversarial games")
    actions = judge.add_subparsers(dest="judge_command", required=True, metavar="ACTION")
    serve = actions.add_parser("serve", help="run the judge HTTP server (loopback by default)")
    serve.add_argument(
        "--backend", choices=LOCAL_BACKENDS, default=SERVER_DEFAULT_BACKEND, help="judge backend (default: rules)"
    )
    serve.add_argument("--host", default="127.0.0.1", help="bind address (default: 127.0.0.1, loopback only)")
    serve.add_argument("--port", type=int, help="port (default: medplay.judge.server_port of configs/medplay.yaml)")
    add_backend_arguments(serve)
    serve.add_argument("--max-body-bytes", type=int, help="largest request body (413 above; default 8 MiB)")
    serve.add_argument("--max-batch", type=int, help="most games or queries per request (413 above; default 256)")
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
    kind.set_defaults(run=lambda args: print(backend_kind(args.backend).where) or 0)
    from medical_team.cli.judge_audit import add_audit_parser
    from medical_team.cli.judge_reward_file import add_reward_file_parser

    add_audit_parser(actions)
    add_reward_file_parser(actions)
