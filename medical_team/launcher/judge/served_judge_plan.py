"""The served (`vllm`) judge's place in the run plan: its loopback address and its local model folder.

Both are fixed before Ray starts (run_plan.py) so that every process reads one address from the frozen
config; a judge model that is not on this machine stops the run there, naming the folder and the fix.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from medical_team.common.errors import UserInputError
from medical_team.judge.settings import JudgeSettings
from medical_team.run.port_claim import hold_port


def resolve_judge_model(model: str) -> Path:
    """The local folder of the judge model (a folder, or a hub id already in the HF cache); else a UserInputError."""
    folder = Path(model).expanduser()
    if (folder / "config.json").is_file():
        return folder.resolve()
    if not folder.is_absolute() and model.count("/") == 1 and not model.startswith("."):
        try:
            from huggingface_hub import snapshot_download

            return Path(snapshot_download(model, local_files_only=True))
        except Exception:  # noqa: BLE001, S110 - not in the cache: the message below says what to do
            pass
    raise UserInputError(
        f"no Hugging Face model here; place the judge model there (e.g. `hf download {_hub_id(model)} --local-dir "
        f"{folder}` on a machine with network access, then copy or mount the folder), or set medplay.judge.model "
        "to a local folder; alternatives: medplay.judge.backend=openai with medplay.judge.url (a remote "
        "judge), or medplay.judge.backend=rules (smoke tests only)",
        file=str(folder),
        field="medplay.judge.model",
    )


def _hub_id(model: str) -> str:
    """The hub id a model folder like /models/google/medgemma-4b-it stands for (its last two parts)."""
    parts = Path(model).parts
    return "/".join(parts[-2:]) if len(parts) >= 2 else model


def served_judge_port() -> int:
    """A port for the judge's server, claimed on the host and held by this process (the launcher) while it runs."""
    return hold_port("the judge's vLLM server")


def served_url(port: int) -> str:
    """The OpenAI-compatible base URL of the judge's server on this loopback port."""
    return f"http://127.0.0.1:{port}/v1"


def served_judge_address(judge: JudgeSettings) -> dict[str, Any]:
    """For a judge served here (`vllm`), the run plan's `medplay.judge.url` and model folder; else nothing.

    The port is chosen before Ray starts (serve.port, else a free one) so that every process reads one
    address from the frozen config.
    """
    if not judge.kind.served_here:
        return {}
    return {
        "medplay.judge.url": served_url(judge.serve.port or served_judge_port()),
        "medplay.judge.model": str(resolve_judge_model(judge.model or "")),
    }
