"""The generation options that `medplay eval` and `medplay predict` share, and their checks."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from medical_team.common.errors import UserInputError

if TYPE_CHECKING:
    from medical_team.evaluate.generation import GenerationSettings


def add_generation_options(parser: argparse.ArgumentParser) -> None:
    """Add --batch-size, --max-new-tokens, --backend, --enforce-eager and --native-thinking."""
    parser.add_argument(
        "--batch-size",
        type=int,
        default=16,
        help="prompts per transformers generate call (default 16); vLLM batches all prompts itself",
    )
    parser.add_argument("--max-new-tokens", type=int, default=1024, help="response length cap (default 1024)")
    parser.add_argument(
        "--backend",
        choices=("auto", "vllm", "transformers"),
        default="auto",
        help="auto: vLLM when installed and a GPU is present, else transformers",
    )
    parser.add_argument(
        "--enforce-eager",
        action="store_true",
        help="vLLM on a GPU: no torch.compile or CUDA graphs (a shorter start, perhaps slower decoding); "
        "always so on CPU",
    )
    parser.add_argument(
        "--native-thinking", action="store_true", help="use the chat template's thinking mode (Qwen3) for the prompt"
    )


def positive(flag: str, value: int | None) -> None:
    """Reject a count below 1, naming the option."""
    if value is not None and value < 1:
        raise UserInputError(f"must be at least 1, got {value}", field=flag)


def generation_settings(args: argparse.Namespace) -> GenerationSettings:
    """The options added by `add_generation_options`, checked, as settings."""
    from medical_team.evaluate.generation import GenerationSettings

    positive("--batch-size", args.batch_size)
    positive("--max-new-tokens", args.max_new_tokens)
    return GenerationSettings(args.max_new_tokens, args.batch_size, args.native_thinking, args.enforce_eager)


def load_error(error: Exception, model: Path | str, field: str) -> UserInputError:
    """A model that transformers or vLLM cannot load, as a one-line user error."""
    reason = " ".join(str(error).split())
    return UserInputError(
        f"cannot load the model locally (nothing is downloaded; pass a model folder or a hub id already "
        f"in the HF cache): {reason}",
        file=str(model),
        field=field,
    )
