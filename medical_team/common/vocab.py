"""The game's shared vocabulary: roles, labels, categories, MEDEC error types, agent loops (one place for each)."""

from __future__ import annotations

from enum import Enum


class Role(str, Enum):
    """Which of the two roles a turn belongs to."""

    ATTACKER = "attacker"
    ASSESSOR = "assessor"


class Label(str, Enum):
    """The truth of a note: it contains a medical error or it does not."""

    ERROR = "error"
    NO_ERROR = "no_error"


class Category(str, Enum):
    """The four game categories (vanilla/adversarial x harmful/benign): docs/game.md, "Seeds and the four categories"."""

    VANILLA_HARMFUL = "vanilla_harmful"
    VANILLA_BENIGN = "vanilla_benign"
    ADVERSARIAL_HARMFUL = "adversarial_harmful"
    ADVERSARIAL_BENIGN = "adversarial_benign"

    @property
    def adversarial(self) -> bool:
        """True when the attacker plays a turn in this category."""
        return self.value.startswith("adversarial")

    @property
    def seed_label(self) -> Label:
        """The label of the seed note this category starts from."""
        return Label.ERROR if self.value.endswith("harmful") else Label.NO_ERROR

    @classmethod
    def of(cls, label: Label, adversarial: bool) -> Category:
        """The category of a seed with this label, played adversarially or not."""
        harm = "harmful" if label is Label.ERROR else "benign"
        return cls(f"{'adversarial' if adversarial else 'vanilla'}_{harm}")


class BenignAttackMode(str, Enum):
    """What the attacker does with a clean note in `adversarial_benign` games."""

    INJECT = "inject"  # introduce exactly one hard-to-detect error (default)
    DECOY = "decoy"  # make it look suspicious while staying medically correct


# MEDEC's error types, in the order the dataset card lists them.
ERROR_TYPES: tuple[str, ...] = ("diagnosis", "management", "treatment", "pharmacotherapy", "causalOrganism")

# verl rows: the data_source / ability columns every game row carries.
DATA_SOURCE = "medec_selfplay"
BENCHMARK_DATA_SOURCE = "medec_benchmark"
ABILITY = "medical_error_detection"

# medplay's agent loops, by the names verl's agent-loop registry knows them (medical_team/agent_loop/agent_loop.py
# registers them; the configs name them). The self-play loop scores its games itself; the assessor loop's rows
# (validation), like those of verl's own agent loops, are scored by verl's reward workers.
SELFPLAY_AGENT = "medplay_selfplay"
ASSESSOR_AGENT = "medplay_assessor"
