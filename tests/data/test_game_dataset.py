"""`convert_medec` on the bundled MEDEC files: the five output files, their contents, determinism."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from medical_team.common.vocab import ABILITY, BENCHMARK_DATA_SOURCE, DATA_SOURCE, BenignAttackMode, Category
from medical_team.data.medec import TEST_CSV, VALIDATION_CSV, bundled_csv
from medical_team.data.openrlhf import OPENRLHF_FIELDS, read_openrlhf_jsonl
from medical_team.data.records import GameSeed
from medical_team.data.text import same_text
from medical_team.data.verl_parquet import read_verl_parquet, validate_verl_parquet
from medical_team.game.dataset import ConvertOptions, convert_medec, convert_openrlhf_to_verl
from medical_team.game.prompts import assessor_messages, first_turn_messages

OUTPUTS = ("train.parquet", "val.parquet", "benchmark.parquet", "train.jsonl", "dataset_report.json")
REQUIRED_EXTRA = (
    "note_id",
    "pair_id",
    "category",
    "label",
    "error_type",
    "error_sentence_id",
    "error_sentence",
    "corrected_sentence",
    "sentences",
    "index",
    "split",
)


def convert(output: Path, **options) -> dict:
    """Convert the bundled files into `output`."""
    return convert_medec([bundled_csv(VALIDATION_CSV)], bundled_csv(TEST_CSV), output, ConvertOptions(**options))


@pytest.fixture(scope="module")
def converted(tmp_path_factory) -> tuple[Path, dict]:
    """The bundled data converted with the defaults (seed 0)."""
    output = tmp_path_factory.mktemp("converted")
    return output, convert(output)


def test_writes_the_five_files_with_the_expected_counts(converted):
    output, report = converted
    assert all((output / name).is_file() for name in OUTPUTS)
    train, val = read_verl_parquet(output / "train.parquet"), read_verl_parquet(output / "val.parquet")
    assert len(train) + len(val) == 638 == report["seeds"]["total"]
    assert 0.08 < len(val) / 638 < 0.12
    counts = Counter(row["extra_info"]["category"] for row in train + val)
    assert all(count in (159, 160) for count in counts.values()) and len(counts) == 4
    assert report["benchmark"]["notes"] == 597
    assert report["benchmark"]["skipped"] == {"empty row (every cell blank)": 328}
    assert json.loads((output / "dataset_report.json").read_text()) == report


def test_every_parquet_file_validates(converted):
    output, _ = converted
    for name in ("train.parquet", "val.parquet", "benchmark.parquet"):
        assert validate_verl_parquet(output / name) == [], name


def test_game_rows_carry_prompt_ground_truth_and_metadata(converted):
    output, _ = converted
    for row in read_verl_parquet(output / "train.parquet"):
        extra = row["extra_info"]
        assert set(REQUIRED_EXTRA) <= set(extra) and extra["split"] == "train"
        assert row["data_source"] == DATA_SOURCE and row["ability"] == ABILITY
        assert row["reward_model"] == {"style": "rule", "ground_truth": extra["label"]}
        seed = GameSeed.from_metadata(extra)
        assert row["prompt"] == first_turn_messages(seed, BenignAttackMode(extra["benign_mode"]))
        if Category(extra["category"]).seed_label.value == "error":
            assert same_text(extra["sentences"][extra["error_sentence_id"]], extra["error_sentence"])


def test_no_note_is_in_two_splits_and_benchmark_is_separate(converted):
    output, _ = converted
    train = {row["extra_info"]["note_id"] for row in read_verl_parquet(output / "train.parquet")}
    val = {row["extra_info"]["note_id"] for row in read_verl_parquet(output / "val.parquet")}
    bench = {row["extra_info"]["text_id"] for row in read_verl_parquet(output / "benchmark.parquet")}
    assert not train & val and not (train | val) & bench


def test_benchmark_rows_hold_the_assessor_prompt_and_ground_truth(converted):
    output, _ = converted
    rows = read_verl_parquet(output / "benchmark.parquet")
    assert [row["extra_info"]["text_id"] for row in rows] == [f"ms-test-{k}" for k in range(597)]
    assert Counter(row["extra_info"]["error_flag"] for row in rows) == {1: 311, 0: 286}
    for row in rows:
        extra = row["extra_info"]
        assert row["data_source"] == BENCHMARK_DATA_SOURCE
        assert row["prompt"] == assessor_messages(extra["text"])
        assert row["reward_model"]["ground_truth"] == ("error" if extra["error_flag"] else "no_error")


def test_no_output_contains_mojibake(converted):
    output, _ = converted
    for name in OUTPUTS:
        if name.endswith(".parquet"):
            text = json.dumps(read_verl_parquet(output / name), ensure_ascii=False)
        else:
            text = (output / name).read_text(encoding="utf-8")
        assert "â€" not in text and "Î¼" not in text, name


def test_jsonl_matches_the_train_split_and_converts_back(converted, tmp_path):
    output, _ = converted
    records = read_openrlhf_jsonl(output / "train.jsonl")
    lines = [json.loads(line) for line in (output / "train.jsonl").read_text(encoding="utf-8").splitlines()]
    assert all(set(OPENRLHF_FIELDS) <= set(line) for line in lines)
    train = read_verl_parquet(output / "train.parquet")
    assert [record.seed for record in records] == [GameSeed.from_metadata(row["extra_info"]) for row in train]
    convert_openrlhf_to_verl(output / "train.jsonl", tmp_path / "again.parquet")
    for original, again in zip(train, read_verl_parquet(tmp_path / "again.parquet"), strict=True):
        assert original["prompt"] == again["prompt"]
        assert original["extra_info"].items() <= again["extra_info"].items()


def test_same_seed_gives_identical_files_and_another_seed_another_draw(converted, tmp_path):
    output, _ = converted
    convert(tmp_path / "same")
    for name in OUTPUTS:
        assert (tmp_path / "same" / name).read_bytes() == (output / name).read_bytes(), name
    convert(tmp_path / "other", seed=1)
    categories = {
        path: [
            row["extra_info"]["category"]
            for name in ("train.parquet", "val.parquet")
            for row in sorted(read_verl_parquet(path / name), key=lambda row: row["extra_info"]["index"])
        ]
        for path in (output, tmp_path / "other")
    }
    assert categories[output] != categories[tmp_path / "other"]


def test_clean_notes_stay_with_the_error_note_before_them(tmp_path, validation_result):
    report = convert(tmp_path, include_clean_notes=True, benign_mode=BenignAttackMode.DECOY, val_ratio=0.2)
    assert report["seeds"]["total"] == 638 + 255
    split_of = {}
    for name in ("train.parquet", "val.parquet"):
        for row in read_verl_parquet(tmp_path / name):
            split_of[row["extra_info"]["note_id"]] = row["extra_info"]["split"]
            assert row["extra_info"]["benign_mode"] == "decoy"
    clean = [note.text_id for note in validation_result.notes if not note.error_flag]
    assert len(clean) == 255 and set(clean) <= set(split_of)
    for note_id in clean:
        assert split_of[note_id] == split_of[f"ms-val-{int(note_id.rsplit('-', 1)[1]) - 1}"]
    assert set(split_of.values()) == {"train", "val"}
