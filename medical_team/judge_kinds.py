"""The judge backends by name, and what each one is: the one place a backend's name is looked at.

Every other module asks `backend_kind(name)` what a backend is (a model reads the rewrites or not, served on this
GPU by `medplay train` or not, built in-process by the judge commands or not) and what it needs in
`medplay.judge` (a URL, an endpoint, a model folder).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class BackendKind:
    """One judge backend: where its verdicts come from and which `medplay.judge` fields it needs."""

    name: str
    judged_by_model: bool  # a model reads the rewrite (`rules` only checks it and echoes the attacker's intent)
    served_here: bool  # `medplay train` starts its vLLM server on this machine's GPU (a share of the card)
    in_process: bool  # `medplay judge serve` and `medplay judge audit` can build it in their own process
    behind_judge_server: bool  # reached through medplay's judge server (`medplay judge serve`)
    needs: tuple[str, ...]  # the `medplay.judge` fields it cannot run without
    why: str  # what the needed fields are: the end of the settings' message when one is missing

    @property
    def reads_a_model_folder(self) -> bool:
        """True when `model` is a local folder this machine loads (hf, vllm), not a name an endpoint serves."""
        return self.needs == ("model",)

    def describe(self, fields: dict[str, object]) -> str:
        """The backend with the values of the fields it needs, e.g. `openai http://host/v1 medgemma`."""
        return " ".join([self.name, *(str(fields[field]) for field in self.needs)])

    @property
    def where(self) -> str:
        """Where its verdicts are made, in one word (`medplay judge kind`, read by the appliance's pipeline)."""
        if self.served_here:
            return "served-here"
        return "judge-server" if self.behind_judge_server else "in-process"


BACKEND_KINDS: dict[str, BackendKind] = {
    kind.name: kind
    for kind in (
        BackendKind("rules", False, False, True, False, (), ""),
        BackendKind("vllm", True, True, False, False, ("model",), "(a local model folder)"),
        BackendKind("hf", True, False, True, False, ("model",), "(a local model folder)"),
        BackendKind(
            "openai", True, False, True, False, ("url", "model"),
            "(a remote OpenAI-compatible judge); for smoke tests only, medplay.judge.backend=rules",
        ),
        BackendKind("http", True, False, False, True, ("url",), "(e.g. http://127.0.0.1:8100)"),
    )
}  # fmt: skip
JUDGE_BACKENDS = tuple(BACKEND_KINDS)
# Backends `medplay judge serve` builds in its own process (vllm is served by `medplay train`).
LOCAL_BACKENDS = tuple(name for name, kind in BACKEND_KINDS.items() if kind.in_process)
# Backends `medplay judge audit` can ask: those it builds, and a running judge server.
AUDITABLE_BACKENDS = tuple(name for name, kind in BACKEND_KINDS.items() if kind.in_process or kind.behind_judge_server)


def backend_kind(name: str) -> BackendKind:
    """The kind of backend `name` (ValueError naming the choices for an unknown one)."""
    try:
        return BACKEND_KINDS[name]
    except KeyError:
        raise ValueError(f"unknown judge backend {name!r}; choose one of {', '.join(JUDGE_BACKENDS)}") from None
