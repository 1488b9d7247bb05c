"""The SFT files `medplay convert` writes: train split only, the game's own prompts, targets the game's parser accepts."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from medical_team.common.vocab import BenignAttackMode, Category, Label, Role
from medical_team.data.medec import TEST_CSV, VALIDATION_CSV, bundled_csv, load_medec
from medical_team.data.seeds import build_seeds
from medical_team.data.sft_parquet import read_sft_parquet
from medical_team.data.verl_parquet import read_verl_parquet
from medical_team.game.answers import parse_assessor_answer, sentence_matches
from medical_team.game.cot import parse_response
from medical_team.game.dataset import ConvertOptions, convert_medec
from medical_team.game.prompts import assessor_messages
from medical_team.game.sft import sft_examples

NOTE_MARK = "Clinical note:\n"


def convert(output: Path, **options) -> dict:
    """Convert the bundled files into `output`."""
    return convert_medec([bundled_csv(VALIDATION_CSV)], bundled_csv(TEST_CSV), output, ConvertOptions(**options))


@pytest.fixture(scope="module")
def converted(tmp_path_factory) -> tuple[Path, dict]:
    """The bundled data converted with the defaults (seed 0, inject)."""
    output = tmp_path_factory.mktemp("sft")
    return output, convert(output)


def prompt_note(row: dict) -> str:
    """The note a row's prompt shows the model."""
    return row["prompt"][-1]["content"].split(NOTE_MARK, 1)[1]


def test_files_and_counts(converted):
    output, report = converted
    train, val = read_sft_parquet(output / "sft_train.parquet"), read_sft_parquet(output / "sft_val.parquet")
    assert report["files"]["sft_train.parquet"] == len(train) and report["files"]["sft_val.parquet"] == len(val)
    assert json.loads((output / "dataset_report.json").read_text())["files"] == report["files"]
    game_train = read_verl_parquet(output / "train.parquet")
    adversarial = sum(row["extra_info"]["category"].startswith("adversarial") for row in game_train)
    # One assessor example per seed, one attacker example per adversarial seed (every inject seed has its pair).
    assert len(train) == len(game_train) + adversarial
    assert {row["extra_info"]["split"] for row in train} == {"train"}
    assert {row["extra_info"]["split"] for row in val} == {"val"}
    assert [row["extra_info"]["index"] for row in train] == list(range(len(train)))


def test_no_note_of_val_or_the_benchmark_in_sft_train(converted):
    output, _ = converted
    train = read_sft_parquet(output / "sft_train.parquet")
    val_rows = read_verl_parquet(output / "val.parquet")
    bench_rows = read_verl_parquet(output / "benchmark.parquet")
    held_out_texts = {row["extra_info"]["text"] for row in val_rows + bench_rows}
    held_out_ids = {row["extra_info"]["note_id"] for row in val_rows} | {
        row["extra_info"]["text_id"] for row in bench_rows
    }
    written = {parse_response(row["response"]).answer for row in train if row["extra_info"]["role"] == "attacker"}
    shown = {prompt_note(row) for row in train} | written
    assert not shown & held_out_texts
    assert not {row["extra_info"]["note_id"] for row in train} & held_out_ids
    assert not {row["extra_info"]["pair_id"] for row in train} & held_out_ids
    # Every note shown is a note of the train split's seeds.
    train_texts = {row["extra_info"]["text"] for row in read_verl_parquet(output / "train.parquet")}
    assert shown <= train_texts


@pytest.mark.parametrize("name", ["sft_train.parquet", "sft_val.parquet"])
def test_every_target_passes_the_game_parser_with_the_right_verdict(converted, name):
    output, _ = converted
    game = read_verl_parquet(output / name.removeprefix("sft_"))
    seeds = {(row["extra_info"]["note_id"], row["extra_info"]["category"]): row for row in game}
    error_notes = {
        row["extra_info"]["note_id"]: row["extra_info"]["text"] for row in game if row["extra_info"]["label"] == "error"
    }
    for row in read_sft_parquet(output / name):
        info = row["extra_info"]
        parsed = parse_response(row["response"])
        assert parsed.compliant, (info, parsed.violations)
        seed_row = seeds[(info["note_id"], info["category"])]
        if info["role"] == Role.ASSESSOR.value:
            assert row["prompt"] == assessor_messages(prompt_note(row))
            answer = parse_assessor_answer(parsed.answer)
            assert answer.verdict is Label(info["label"]) is Label(seed_row["extra_info"]["label"])
            if answer.verdict is Label.ERROR:
                assert sentence_matches(answer.sentence, seed_row["extra_info"]["error_sentence"])
                assert answer.error_type == seed_row["extra_info"]["error_type"]
                assert sentence_matches(answer.correction, seed_row["extra_info"]["corrected_sentence"])
        else:
            # The attacker sees exactly the game's first-turn prompt of that seed.
            assert row["prompt"] == seed_row["prompt"]
            assert info["label"] == Label.ERROR.value
            if info["category"] == Category.ADVERSARIAL_BENIGN.value:
                # inject: the target is the original error note of the same MEDEC note.
                assert parsed.answer == error_notes[info["note_id"]] != prompt_note(row)
            else:
                assert parsed.answer == prompt_note(row)


def test_error_targets_state_the_sentence_and_its_correction_once(converted):
    # The reasoning names the sentence by its id and the error type; only the answer quotes the sentence and its
    # correction, so an ERROR target is not twice as long as a NO_ERROR one (docs/game.md).
    output, _ = converted
    game = read_verl_parquet(output / "train.parquet")
    seeds = {(row["extra_info"]["note_id"], row["extra_info"]["category"]): row["extra_info"] for row in game}
    assessor = [
        row for row in read_sft_parquet(output / "sft_train.parquet") if row["extra_info"]["role"] == "assessor"
    ]
    errors = [row for row in assessor if row["extra_info"]["label"] == Label.ERROR.value]
    assert errors and len(errors) < len(assessor)
    for row in errors:
        seed = seeds[(row["extra_info"]["note_id"], row["extra_info"]["category"])]
        parsed = parse_response(row["response"])
        assert f"Sentence {seed['error_sentence_id']} " in parsed.reasoning
        assert f"a {seed['error_type']} error" in parsed.reasoning
        for sentence in (seed["error_sentence"], seed["corrected_sentence"]):
            assert sentence not in parsed.reasoning
            assert row["response"].count(sentence) == 1
    # The two verdicts' reasonings are alike in length; the difference is the answer's sentence and correction.
    longest = Counter()
    for row in assessor:
        label = row["extra_info"]["label"]
        longest[label] = max(longest[label], len(parse_response(row["response"]).reasoning))
    assert longest[Label.ERROR.value] < 1.5 * longest[Label.NO_ERROR.value]


def test_decoy_targets_keep_the_clean_note(tmp_path):
    convert(tmp_path, benign_mode=BenignAttackMode.DECOY)
    rows = read_sft_parquet(tmp_path / "sft_train.parquet")
    decoys = [
        r for r in rows if r["extra_info"]["role"] == "attacker" and r["extra_info"]["category"] == "adversarial_benign"
    ]
    assert decoys
    for row in decoys:
        assert row["extra_info"]["label"] == Label.NO_ERROR.value
        assert parse_response(row["response"]).answer == prompt_note(row)


def test_clean_notes_without_a_pair_get_no_inject_target():
    notes = load_medec(bundled_csv(VALIDATION_CSV)).notes
    seeds = build_seeds(notes, seed=0, include_clean_notes=True)
    examples = sft_examples(seeds, BenignAttackMode.INJECT)
    counts = Counter((e.role, e.seed.category) for e in examples)
    clean_ids = {note.text_id for note in notes if not note.error_flag}
    inject_clean = [s for s in seeds if s.category is Category.ADVERSARIAL_BENIGN and s.note_id in clean_ids]
    assert inject_clean
    assert counts[(Role.ASSESSOR, Category.ADVERSARIAL_BENIGN)] - counts[
        (Role.ATTACKER, Category.ADVERSARIAL_BENIGN)
    ] == len(inject_clean)
