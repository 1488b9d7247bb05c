"""verl parquet and OpenRLHF JSONL: metadata survives JSONL -> parquet, written rows validate, bad rows are caught."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from medical_team.common.errors import UserInputError
from medical_team.common.vocab import ERROR_TYPES, BenignAttackMode, Category, Label
from medical_team.data.openrlhf import OPENRLHF_FIELDS, read_openrlhf_jsonl, to_openrlhf, write_openrlhf_jsonl
from medical_team.data.records import GameSeed, MedecNote
from medical_team.data.verl_parquet import read_verl_parquet, validate_row, validate_verl_parquet, write_verl_parquet
from medical_team.game.dataset import benchmark_row, convert_openrlhf_to_verl, game_row
from medical_team.game.prompts import first_turn_messages

PROPERTY = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
RESERVED = set(GameSeed.__dataclass_fields__) | set(OPENRLHF_FIELDS) | {"index", "split", "benign_mode"}

texts = st.text(min_size=1, max_size=60).filter(lambda text: text.strip())
optional_texts = st.none() | texts


@st.composite
def game_seeds(draw) -> GameSeed:
    """Any consistent seed: an error seed names one of its sentences; a no-error seed names none."""
    category = draw(st.sampled_from(list(Category)))
    sentences = draw(st.lists(texts, min_size=1, max_size=6))
    has_error = category.seed_label is Label.ERROR
    sentence_id = draw(st.integers(0, len(sentences) - 1)) if has_error else -1
    note_id = draw(texts)
    return GameSeed(
        note_id=note_id,
        pair_id=draw(st.just(note_id) | texts),
        category=category,
        label=category.seed_label,
        text=" ".join(sentences),
        error_type=draw(st.sampled_from(ERROR_TYPES) | st.none()) if has_error else None,
        error_sentence_id=sentence_id,
        error_sentence=sentences[sentence_id] if has_error else None,
        corrected_sentence=draw(texts) if has_error else None,
        source_file=draw(texts),
        sentences=tuple(sentences),
    )


METADATA_VALUES = [
    texts,
    st.integers(-(2**63), 2**63 - 1),
    st.booleans(),
    st.floats(allow_nan=False, allow_infinity=False),
    st.lists(texts, max_size=4),
]


@st.composite
def jsonl_files(draw) -> list[dict]:
    """JSONL objects for random seeds plus further metadata keys (one value type per key, nulls allowed)."""
    keys = draw(
        st.dictionaries(
            st.from_regex(r"[a-z][a-z0-9_]{0,10}", fullmatch=True).filter(lambda key: key not in RESERVED),
            st.integers(0, len(METADATA_VALUES) - 1),
            max_size=4,
        )
    )
    records = []
    for index, seed in enumerate(draw(st.lists(game_seeds(), min_size=1, max_size=5))):
        extra = {key: draw(st.none() | METADATA_VALUES[kind]) for key, kind in keys.items()}
        extra.update(
            index=index,
            split=draw(st.sampled_from(["train", "val"])),
            benign_mode=draw(st.sampled_from([m.value for m in BenignAttackMode])),
            adversarial=draw(st.just("") | texts),
        )
        records.append(to_openrlhf(seed, extra))
    return records


@PROPERTY
@given(records=jsonl_files())
def test_every_jsonl_field_survives_conversion_to_parquet(tmp_path_factory, records):
    folder = tmp_path_factory.mktemp("jsonl")
    write_openrlhf_jsonl(records, folder / "train.jsonl")
    assert convert_openrlhf_to_verl(folder / "train.jsonl", folder / "train.parquet") == len(records)
    rows = read_verl_parquet(folder / "train.parquet")
    renamed = {"vanilla": "text", "data_type": "category"}
    for record, row in zip(records, rows, strict=True):
        assert set(OPENRLHF_FIELDS) <= set(record)
        for key, value in record.items():
            assert row["extra_info"][renamed.get(key, key)] == value, key
        seed = GameSeed.from_metadata(row["extra_info"])
        assert row["prompt"] == first_turn_messages(seed, BenignAttackMode(record["benign_mode"]))
        assert row["reward_model"]["ground_truth"] == record["label"]
    assert validate_verl_parquet(folder / "train.parquet") == []


@PROPERTY
@given(seeds=st.lists(game_seeds(), min_size=1, max_size=6), mode=st.sampled_from(list(BenignAttackMode)))
def test_every_written_game_row_passes_the_validator(tmp_path_factory, seeds, mode):
    path = tmp_path_factory.mktemp("rows") / "game.parquet"
    write_verl_parquet([game_row(s, index=i, split="train", benign_mode=mode) for i, s in enumerate(seeds)], path)
    assert validate_verl_parquet(path) == []
    assert [GameSeed.from_metadata(row["extra_info"]) for row in read_verl_parquet(path)] == seeds


@st.composite
def benchmark_notes(draw) -> MedecNote:
    """Any consistent MEDEC note."""
    sentences = draw(st.lists(texts, min_size=1, max_size=5))
    error = draw(st.booleans())
    sentence_id = draw(st.integers(0, len(sentences) - 1)) if error else -1
    return MedecNote(
        text_id=draw(texts),
        text=" ".join(sentences),
        sentences=tuple(sentences),
        error_flag=error,
        error_type=draw(st.sampled_from(ERROR_TYPES) | st.none()) if error else None,
        error_sentence_id=sentence_id,
        error_sentence=sentences[sentence_id] if error else None,
        corrected_sentence=draw(texts) if error else None,
        corrected_text=draw(texts) if error else None,
        source_file="test.csv",
        source_row=1,
    )


@PROPERTY
@given(notes=st.lists(benchmark_notes(), min_size=1, max_size=6))
def test_every_written_benchmark_row_passes_the_validator(tmp_path_factory, notes):
    path = tmp_path_factory.mktemp("bench") / "benchmark.parquet"
    write_verl_parquet([benchmark_row(note, index) for index, note in enumerate(notes)], path)
    assert validate_verl_parquet(path) == []


def _valid_row() -> dict:
    seed = GameSeed(
        note_id="ms-1",
        pair_id="ms-1",
        category=Category.ADVERSARIAL_HARMFUL,
        label=Label.ERROR,
        text="One. Two.",
        error_type="diagnosis",
        error_sentence_id=1,
        error_sentence="Two.",
        corrected_sentence="Three.",
        source_file="x.csv",
        sentences=("One.", "Two."),
    )
    return game_row(seed, index=0, split="train")


def test_validator_reports_every_problem_of_a_row():
    row = _valid_row()
    assert validate_row(row) == []
    row["prompt"] = [{"role": "user", "content": "   "}]
    row["extra_info"]["label"] = "no_error"
    row["extra_info"]["error_type"] = "typo"
    fields = [field for field, _ in validate_row(row)]
    assert "prompt[0].content" in fields
    assert "extra_info.label" in fields  # contradicts the category
    assert "reward_model.ground_truth" in fields  # differs from the label
    assert "extra_info.error_type" in fields


def test_validator_names_rows_of_a_file_and_repeated_indices(tmp_path):
    good, bad = _valid_row(), _valid_row()
    bad["extra_info"]["error_sentence_id"] = 9
    path = tmp_path / "rows.parquet"
    write_verl_parquet([good, bad], path)
    problems = validate_verl_parquet(path)
    assert {(p.row, p.field) for p in problems} == {(2, "extra_info.error_sentence_id"), (2, "extra_info.index")}
    assert "rows.parquet:row 2" in str(problems[0])
    (tmp_path / "junk.parquet").write_bytes(b"not parquet")
    assert "parquet" in validate_verl_parquet(tmp_path / "junk.parquet")[0].message


def _valid_record() -> dict:
    return to_openrlhf(GameSeed.from_metadata(_valid_row()["extra_info"]))


@pytest.mark.parametrize(
    ("change", "field"),
    [
        (lambda record: "{not json", None),
        (lambda record: "[1, 2]", None),
        (lambda record: json.dumps({"vanilla": "x"}), "data_type"),
        (lambda record: json.dumps({**record, "data_type": "nope"}), "data_type"),
        (lambda record: json.dumps({**record, "label": "no_error"}), "label"),
        (lambda record: json.dumps({**record, "error_sentence_id": "2"}), "error_sentence_id"),
        (lambda record: json.dumps({**record, "vanilla": "  "}), "vanilla"),
        (lambda record: json.dumps({**record, "rank": 2**70}), "rank"),
        (lambda record: json.dumps(record).replace("}", ', "x": NaN}'), None),
    ],
)
def test_reader_names_line_and_field(tmp_path, change, field):
    path = tmp_path / "bad.jsonl"
    record = _valid_record()
    path.write_text(json.dumps(record) + "\n" + change(record) + "\n", encoding="utf-8")
    with pytest.raises(UserInputError) as caught:
        read_openrlhf_jsonl(path)
    assert (caught.value.file, caught.value.row, caught.value.field) == ("bad.jsonl", 2, field)
