"""The fixed games of a cross-play league: the validation split's game seeds, from a game parquet or a MEDEC CSV.

By default the seeds are the val split `medplay convert` writes with its defaults (bundled MEDEC-MS
validation file, seed 0, val ratio 0.1), rebuilt in memory, so every league on the same input plays
the same games in the same order.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from medical_team.common.errors import UserInputError
from medical_team.common.vocab import DATA_SOURCE, BenignAttackMode
from medical_team.data.records import GameSeed


@dataclass(frozen=True)
class LeagueSeeds:
    """The seeds every cell of the league plays, in order, with the attacker task for clean notes."""

    source: str
    seeds: tuple[GameSeed, ...]
    benign_mode: BenignAttackMode

    def head(self, limit: int | None) -> LeagueSeeds:
        """The first `limit` seeds (all when None)."""
        return self if limit is None else LeagueSeeds(self.source, self.seeds[:limit], self.benign_mode)


def load_league_seeds(path: str | Path | None, field: str = "--seeds") -> LeagueSeeds:
    """Seeds from a game parquet (`val.parquet` of `medplay convert`), or the val split of a MEDEC CSV (default: bundled)."""
    from medical_team.data.medec import VALIDATION_CSV, bundled_csv

    path = Path(path) if path is not None else bundled_csv(VALIDATION_CSV)
    if not path.is_file():
        raise UserInputError("no such file", file=str(path), field=field)
    seeds = _from_csv(path) if path.suffix.lower() == ".csv" else _from_parquet(path, field)
    if not seeds.seeds:
        raise UserInputError("holds no game seeds", file=str(path), field=field)
    return seeds


def _from_csv(path: Path) -> LeagueSeeds:
    """The val split of a MEDEC CSV, drawn exactly as `medplay convert` draws it with its defaults."""
    from medical_team.data.medec import load_medec
    from medical_team.game.dataset import ConvertOptions, build_game_dataset

    options = ConvertOptions()
    dataset = build_game_dataset(load_medec(path).notes, options)
    return LeagueSeeds(str(path), dataset.val, options.benign_mode)


def _from_parquet(path: Path, field: str) -> LeagueSeeds:
    """Every row of a game parquet, checked row by row; all rows must share one benign attack mode."""
    from medical_team.data.verl_parquet import read_checked_rows

    seeds: list[GameSeed] = []
    modes: set[str] = set()
    wanted = "a game file of `medplay convert` (val.parquet) or a MEDEC CSV"
    for number, row in enumerate(read_checked_rows(path, DATA_SOURCE, wanted), start=1):
        info = row["extra_info"]
        try:
            seeds.append(GameSeed.from_metadata(info))
            modes.add(BenignAttackMode(info.get("benign_mode", BenignAttackMode.INJECT.value)).value)
        except (KeyError, ValueError, TypeError) as error:
            raise UserInputError(f"not a game seed: {error}", file=path.name, row=number, field="extra_info") from None
    if len(modes) > 1:
        raise UserInputError(
            f"rows mix benign attack modes {sorted(modes)}; use one file per mode", file=path.name, field=field
        )
    mode = BenignAttackMode(modes.pop()) if modes else BenignAttackMode.INJECT
    return LeagueSeeds(str(path), tuple(seeds), mode)
