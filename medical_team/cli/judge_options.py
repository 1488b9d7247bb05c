"""The judge options, defined once: `medplay judge serve`, `medplay judge audit` and `medplay eval --crossplay`.

The judge commands name them --backend, --model, --url, --api-key-env (with --device, --dtype, --allow-download,
--max-new-tokens, --batch-size for the judge they build); `medplay eval`, whose --model is the model evaluated, names
the same options --judge, --judge-model, --judge-url, --judge-api-key-env. Each command holds a `JudgeOptions`.
"""

from __future__ import annotations

import argparse
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from medical_team.cli.arg_types import int_at_least
from medical_team.common.errors import UserInputError
from medical_team.judge.judge_kinds import backend_kind

if TYPE_CHECKING:
    from medical_team.judge.backends import Runtime
    from medical_team.judge.judge_kinds import BackendKind
    from medical_team.judge.settings import JudgeSettings

ENDPOINT = "the endpoint, e.g. http://127.0.0.1:8001/v1 (openai) or http://127.0.0.1:8100 (http)"


@dataclass(frozen=True)
class JudgeChoice:
    """The judge a command's options name, checked: its backend's kind and the fields given (None where unset)."""

    kind: BackendKind
    model: str | None
    url: str | None
    api_key: str | None  # read from the environment variable the options name

    def given(self) -> dict[str, str]:
        """The `medplay.judge` fields the options set; unset ones keep configs/medplay.yaml's values."""
        fields = {"backend": self.kind.name, "model": self.model, "url": self.url}
        return {field: value for field, value in fields.items() if value is not None}


@dataclass(frozen=True)
class JudgeOptions:
    """One command's judge options: the backends it offers, its flags' names, how its errors name the backend."""

    backends: tuple[str, ...]
    default: str | None
    backend_help: str
    backend_flag: str = "--backend"
    prefix: str = "--"  # of the other flags: `medplay eval` has --judge-model, --judge-url, --judge-api-key-env
    noun: str = "backend"  # errors say "backend 'openai' needs ..." (`medplay eval`: "judge 'openai' ...")
    endpoint: str = ENDPOINT  # what the URL option is, in the error when it is missing
    runtime: bool = True  # --device, --dtype, --allow-download, --max-new-tokens, --batch-size (the judge commands)

    def flag(self, field: str) -> str:
        """The option that sets `field` (backend, model, url, api_key_env)."""
        return self.backend_flag if field == "backend" else self.prefix + field.replace("_", "-")

    def value(self, args: argparse.Namespace, field: str) -> str | None:
        """What the option of `field` was given (None when unset)."""
        return getattr(args, self.flag(field).removeprefix("--").replace("-", "_"))

    def add_to(self, parser: argparse.ArgumentParser) -> None:
        """Add the options to a command's parser; unset ones take configs/medplay.yaml's `medplay.judge` values."""
        which = self.backend_flag
        parser.add_argument(which, choices=self.backends, default=self.default, help=self.backend_help)
        parser.add_argument(
            self.flag("model"),
            help=f"{which} hf: local model folder or cached hub id (default: medplay.judge.model); "
            "openai: the served model name",
        )
        parser.add_argument(
            self.flag("url"),
            help=f"{which} openai: the endpoint's base URL including /v1, e.g. http://127.0.0.1:8001/v1; "
            "http: the address of a judge server (`medplay judge serve`)",
        )
        parser.add_argument(
            self.flag("api_key_env"), metavar="VAR", help=f"{which} openai: environment variable that holds the API key"
        )
        if self.runtime:
            _add_runtime_arguments(parser)

    def choice(self, args: argparse.Namespace, backend: str | None = None) -> JudgeChoice:
        """The judge the options name (`backend` in place of the given one), or `UserInputError` naming the option."""
        kind = backend_kind(backend or self.value(args, "backend"))
        model, url, key_env = (self.value(args, field) for field in ("model", "url", "api_key_env"))
        given = {"url": url, "model": model}
        what = {"url": self.endpoint, "model": "the served model name"}
        missing = [field for field in kind.needs if not given[field]]
        if missing and not kind.reads_a_model_folder:
            raise UserInputError(f"{self.noun} {kind.name!r} needs {what[missing[0]]}", field=self.flag(missing[0]))
        if url and not url.startswith(("http://", "https://")):
            raise UserInputError(f"{url!r} is not an http(s) URL", field=self.flag("url"))
        looks_like_path = bool(model) and model.startswith(("/", ".", "~"))
        if kind.reads_a_model_folder and looks_like_path and not Path(model).expanduser().is_dir():
            raise UserInputError(f"model directory {model} does not exist", field=self.flag("model"))
        if key_env and not os.environ.get(key_env):
            raise UserInputError(f"environment variable {key_env} is not set", field=self.flag("api_key_env"))
        return JudgeChoice(kind, model, url, os.environ.get(key_env) if key_env else None)


def judge_settings(
    args: argparse.Namespace, options: JudgeOptions, backend: str | None = None
) -> tuple[JudgeSettings, Runtime]:
    """A judge command's judge: configs/medplay.yaml's `medplay.judge` with the options given, both checked, and how
    to run it here."""
    from medical_team.judge.backends import Runtime
    from medical_team.judge.settings import packaged_judge_settings

    chosen = options.choice(args, backend)
    given = {
        "batch_size": args.batch_size,
        "min_length_ratio": getattr(args, "min_length_ratio", None),
        "max_length_ratio": getattr(args, "max_length_ratio", None),
        "serve": {"max_tokens": args.max_new_tokens} if args.max_new_tokens is not None else None,
    }
    # behind the server a fully failed batch answers 503, so the client retries and counts it
    settings = packaged_judge_settings(
        max_consecutive_failures=1, **chosen.given(), **{k: v for k, v in given.items() if v is not None}
    )
    runtime = Runtime(
        api_key=chosen.api_key, device=args.device, dtype=args.dtype, local_files_only=not args.allow_download
    )
    return settings, runtime


def _add_runtime_arguments(parser: argparse.ArgumentParser) -> None:
    """How a judge command runs the judge it builds."""
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
