"""The judge server's wire format: typed, bounded pydantic models shared by the server and its client."""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, model_validator

from medical_team.common.vocab import Category, Label
from medical_team.data.records import GameSeed
from medical_team.game.judging import JudgeRequest, JudgeVerdict

MAX_NOTE_CHARS = 100_000  # a MEDEC note is a few thousand characters
MAX_SHORT_CHARS = 1_000  # ids, file names, error types
MAX_ITEMS = 100_000  # hard bound on list lengths; the configured batch limit is checked by the server


def _valid_unicode(text: str) -> str:
    """Reject lone surrogates (valid in JSON escapes, but not encodable text)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as error:
        raise ValueError(f"text contains an unpaired surrogate at position {error.start}") from None
    return text


NoteText = Annotated[str, Field(max_length=MAX_NOTE_CHARS), AfterValidator(_valid_unicode)]
ShortText = Annotated[str, Field(max_length=MAX_SHORT_CHARS), AfterValidator(_valid_unicode)]


class SeedIn(BaseModel):
    """A game seed (the fields of `GameSeed`)."""

    model_config = ConfigDict(extra="forbid")

    note_id: ShortText
    pair_id: ShortText
    category: Category
    label: Label
    text: Annotated[NoteText, Field(min_length=1)]
    error_type: ShortText | None = None
    error_sentence_id: int = Field(default=-1, ge=-1, le=100_000)
    error_sentence: NoteText | None = None
    corrected_sentence: NoteText | None = None
    source_file: ShortText = ""
    sentences: list[NoteText] = Field(default=[], max_length=10_000)

    @model_validator(mode="after")
    def _label_matches_category(self) -> SeedIn:
        if self.label is not self.category.seed_label:
            raise ValueError(f"label '{self.label.value}' does not match category '{self.category.value}'")
        return self


class GameIn(BaseModel):
    """One adversarial game to judge: the seed, the label the rewrite should have, and the rewrite."""

    model_config = ConfigDict(extra="forbid")

    seed: SeedIn
    intended_label: Label
    rewrite: NoteText

    @model_validator(mode="after")
    def _adversarial_only(self) -> GameIn:
        if not self.seed.category.adversarial:
            raise ValueError(f"category '{self.seed.category.value}' is vanilla: its label comes from the data")
        if self.seed.category is Category.ADVERSARIAL_HARMFUL and self.intended_label is not Label.ERROR:
            raise ValueError("an adversarial_harmful rewrite must keep the error: intended_label must be 'error'")
        return self

    @classmethod
    def from_request(cls, request: JudgeRequest) -> GameIn:
        """The wire form of a `JudgeRequest`."""
        return cls(
            seed=SeedIn(**request.seed.metadata()), intended_label=request.intended_label, rewrite=request.rewrite
        )

    def to_request(self) -> JudgeRequest:
        """The `JudgeRequest` this game describes."""
        return JudgeRequest(
            seed=GameSeed(**self.seed.model_dump()), intended_label=self.intended_label, rewrite=self.rewrite
        )


class JudgeBatchIn(BaseModel):
    """`POST /v1/judge` body: a batch of games."""

    model_config = ConfigDict(extra="forbid")

    games: list[GameIn] = Field(min_length=1, max_length=MAX_ITEMS)


class VerdictOut(BaseModel):
    """One verdict (the fields of `JudgeVerdict`)."""

    error_present: bool | None
    faithful: bool | None
    error_sentence: str | None = None
    tie: bool = False
    reason: str = ""
    parse_error: bool = False

    @classmethod
    def from_verdict(cls, verdict: JudgeVerdict) -> VerdictOut:
        """The wire form of a verdict."""
        return cls(**verdict.__dict__)

    def to_verdict(self) -> JudgeVerdict:
        """The `JudgeVerdict` this describes."""
        return JudgeVerdict(**self.model_dump())


class JudgeBatchOut(BaseModel):
    """`POST /v1/judge` answer: one verdict per game, in order."""

    verdicts: list[VerdictOut]


class RewardBatchIn(BaseModel):
    """`POST /judge` body as OpenRLHF's remote reward-model client sends it (extra keys are ignored)."""

    model_config = ConfigDict(extra="ignore")

    query: list[NoteText] = Field(min_length=1, max_length=MAX_ITEMS)  # prompt + response, as generated
    prompts: list[NoteText] | None = Field(default=None, max_length=MAX_ITEMS)
    labels: list[NoteText] = Field(max_length=MAX_ITEMS)  # "error" / "no_error", or a JSON object (docs/judge.md)

    @model_validator(mode="after")
    def _same_lengths(self) -> RewardBatchIn:
        if len(self.labels) != len(self.query):
            raise ValueError(f"got {len(self.query)} queries but {len(self.labels)} labels")
        if self.prompts is not None and len(self.prompts) != len(self.query):
            raise ValueError(f"got {len(self.query)} queries but {len(self.prompts)} prompts")
        return self


class RewardBatchOut(BaseModel):
    """`POST /judge` answer: the assessor reward of each query (`scores` repeats it for newer clients)."""

    rewards: list[float]
    scores: list[float]
    extra_logs: dict[str, list[float]]


class ErrorOut(BaseModel):
    """Every 4xx/5xx answer: a one-line reason and, for validation errors, where each problem is."""

    detail: str
    errors: list[str] = []
