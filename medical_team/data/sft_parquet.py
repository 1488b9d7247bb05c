"""SFT parquet files (`sft_train.parquet`, `sft_val.parquet`): the game's prompt messages and a target response.

A row is `{"data_source", "prompt": [messages], "response": text, "extra_info": {...}}`; `response` is the
continuation after the thinking prefix. Rows are built in `medical_team.game.sft`.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from medical_team.common.errors import UserInputError
from medical_team.data.verl_parquet import Row, write_row_groups

SFT_TRAIN_PARQUET = "sft_train.parquet"
SFT_VAL_PARQUET = "sft_val.parquet"

_MESSAGE = pa.struct([("role", pa.string()), ("content", pa.string())])
SFT_SCHEMA = pa.schema(
    [
        ("data_source", pa.string()),
        ("prompt", pa.list_(_MESSAGE)),
        ("response", pa.string()),
        (
            "extra_info",
            pa.struct(
                [
                    ("index", pa.int64()),
                    ("split", pa.string()),
                    ("role", pa.string()),
                    ("category", pa.string()),
                    ("note_id", pa.string()),
                    ("pair_id", pa.string()),
                    ("label", pa.string()),
                    ("benign_mode", pa.string()),
                ]
            ),
        ),
    ]
)


def write_sft_parquet(rows: Sequence[Row], path: str | Path) -> None:
    """Write SFT rows with the fixed schema; the same rows always give the same bytes."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_row_groups(rows, SFT_SCHEMA, path)


def read_sft_parquet(path: str | Path) -> list[Row]:
    """All rows of an SFT parquet file as plain Python values."""
    path = Path(path)
    try:
        table = pq.read_table(path)
    except FileNotFoundError:
        raise UserInputError("no such file; write it with `medplay convert`", file=str(path)) from None
    except (pa.ArrowInvalid, OSError) as error:
        raise UserInputError(f"not a readable parquet file: {error}", file=path.name) from None
    missing = [name for name in ("prompt", "response") if name not in table.column_names]
    if missing:
        raise UserInputError(f"not an SFT file: no {', '.join(missing)} column", file=path.name)
    return table.to_pylist()
