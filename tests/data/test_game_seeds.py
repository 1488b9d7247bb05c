"""Game seeds of the bundled validation file: counts, pairs, categories and their seeded draw."""

from __future__ import annotations

from collections import Counter

from medical_team.common.vocab import Category, Label
from medical_team.data.seeds import build_seeds


def test_638_seeds_in_four_categories_of_159_or_160(validation_result):
    seeds = build_seeds(validation_result.notes, seed=0)
    assert len(seeds) == 638
    counts = Counter(seed.category for seed in seeds)
    assert set(counts) == set(Category)
    assert all(count in (159, 160) for count in counts.values())
    assert Counter(seed.label for seed in seeds) == {Label.ERROR: 319, Label.NO_ERROR: 319}


def test_each_error_note_gives_a_harmful_and_a_benign_seed_sharing_a_pair_id(validation_result):
    seeds = build_seeds(validation_result.notes, seed=0)
    by_pair: dict[str, list] = {}
    for seed in seeds:
        by_pair.setdefault(seed.pair_id, []).append(seed)
    notes = {note.text_id: note for note in validation_result.notes}
    for pair_id, pair in by_pair.items():
        harmful, benign = sorted(pair, key=lambda seed: seed.label is Label.NO_ERROR)
        note = notes[pair_id]
        assert harmful.label is Label.ERROR and benign.label is Label.NO_ERROR
        assert harmful.text == note.text and benign.text == note.corrected_text
        assert harmful.error_sentence == note.error_sentence and harmful.error_type == note.error_type
        assert benign.error_sentence_id == -1 and benign.error_type is None
        assert benign.sentences[note.error_sentence_id] == note.corrected_sentence
        assert all(seed.category.seed_label is seed.label for seed in pair)


def test_clean_notes_are_optional_benign_seeds(validation_result):
    seeds = build_seeds(validation_result.notes, seed=0, include_clean_notes=True)
    assert len(seeds) == 638 + 255
    benign = [seed for seed in seeds if seed.label is Label.NO_ERROR]
    assert Counter(seed.category for seed in benign) == {
        Category.VANILLA_BENIGN: 287,
        Category.ADVERSARIAL_BENIGN: 287,
    }


def test_same_seed_same_draw_and_different_seeds_different_draws(validation_result):
    def draw(seed: int) -> list[str]:
        return [game_seed.category.value for game_seed in build_seeds(validation_result.notes, seed=seed)]

    assert draw(7) == draw(7)
    assert draw(7) != draw(8)
