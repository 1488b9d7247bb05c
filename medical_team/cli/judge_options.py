"""The options an in-process judge backend takes, shared by `medplay judge serve` and `medplay judge audit`."""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import TYPE_CHECKING

from medical_team.cli.arg_types import int_at_least
from medical_team.errors import UserInputError
from medical_team.judge_kinds import backend_kind

if TYPE_CHECKING:
    from medical_team.judge.backends import Runtime
    from medical_team.judge.settings import JudgeSettings

# An endpoint backend's fields, the option that sets each, and what it is.
NEEDED_OPTIONS = (
    ("url", "--url", "the endpoint, e.g. http://127.0.0.1:8001/v1 (openai) or http://127.0.0.1:8100 (http)"),
    ("model", "--model", "the served model name"),
)


def check_args(args: argparse.Namespace) -> None:
    """Reject option combinations that cannot work, naming the option."""
    kind = backend_kind(args.backend)
    for field, option, what in NEEDED_OPTIONS:
        if field in kind.needs and not kind.reads_a_model_folder and not getattr(args, field):
            raise UserInputError(f"backend {kind.name!r} needs {what}", field=option)
    if args.url and not args.url.startswith(("http://", "https://")):
        raise UserInputError(f"{args.url!r} is not an http(s) URL", field="--url")
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
        "url": args.url,
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


def add_backend_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of an in-process judge backend; unset ones take configs/medplay.yaml's `medplay.judge` values."""
    parser.add_argument("--model", help="hf: local path or cached hub id (default: medplay.judge.model); openai: model")
    parser.add_argument(
        "--url", help="openai: the endpoint's base URL including /v1; http (audit): the judge server's address"
    )
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
