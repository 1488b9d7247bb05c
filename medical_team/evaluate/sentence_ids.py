"""Map the sentence an assessor quoted to its MEDEC sentence id by normalised matching."""

from __future__ import annotations

from collections.abc import Sequence
from difflib import SequenceMatcher

from medical_team.game.answers import sentence_matches

# A quote that is neither equal to nor contained in a sentence still counts when this similar
# (difflib ratio on case- and space-normalised text): models copy sentences with small slips.
FUZZY_MIN_RATIO = 0.85


def _folded(text: str) -> str:
    """Case-folded text with runs of whitespace collapsed."""
    return " ".join(text.casefold().split())


def _similarity(a: str, b: str) -> float:
    """difflib similarity of two texts after folding case and whitespace."""
    return SequenceMatcher(None, _folded(a), _folded(b), autojunk=False).ratio()


def sentence_id_of(quoted: str | None, sentences: Sequence[str]) -> int | None:
    """The id of the note sentence the quote names, or None when no sentence matches.

    In order: equal after normalisation (first such sentence); one contains the other covering
    at least 80 % of it (the most similar such sentence); otherwise the most similar sentence if
    its similarity reaches FUZZY_MIN_RATIO.
    """
    if not quoted or not quoted.strip():
        return None
    for index, sentence in enumerate(sentences):
        if sentence_matches(quoted, sentence, min_coverage=1.0):
            return index
    scored = [(_similarity(quoted, sentence), index) for index, sentence in enumerate(sentences)]
    contained = [(score, index) for score, index in scored if sentence_matches(quoted, sentences[index])]
    if contained:
        return max(contained, key=lambda pair: (pair[0], -pair[1]))[1]
    if not scored:
        return None
    best_score, best_index = max(scored, key=lambda pair: (pair[0], -pair[1]))
    return best_index if best_score >= FUZZY_MIN_RATIO else None
