"""`medplay eval --crossplay`: the N x N league of checkpoints, its matrix files, and its user mistakes."""

import json
import shutil
from collections import Counter
from pathlib import Path

import pytest

from medical_team.cli import main
from medical_team.common.vocab import Label, Role
from medical_team.evaluate.crossplay import Checkpoint, play_league, play_order
from medical_team.evaluate.league_seeds import load_league_seeds
from medical_team.game.prompts import assessor_messages, attacker_messages, first_turn_messages, prompt_role
from medical_team.judge.rules import RulesJudge

GAMES = 4


@pytest.fixture(scope="module")
def two_checkpoints(tmp_path_factory) -> tuple[Path, Path]:
    """Two tiny random models from different seeds: an HF folder and a verl checkpoint root holding an HF export."""
    from medical_team.models.tiny import TinyModelSpec, build_tiny_model

    root = tmp_path_factory.mktemp("league")
    early = build_tiny_model(root / "early", TinyModelSpec(seed=0))
    late_hf = build_tiny_model(root / "late-hf", TinyModelSpec(seed=1))
    late = root / "late"
    shutil.copytree(late_hf, late / "global_step_2" / "actor" / "huggingface")
    (late / "latest_checkpointed_iteration.txt").write_text("2")
    return early, late


@pytest.fixture(scope="module")
def league_run(two_checkpoints, tmp_path_factory) -> Path:
    """One `medplay eval --crossplay` of the two checkpoints on the first games of the val split (transformers, CPU)."""
    output = tmp_path_factory.mktemp("crossplay")
    early, late = two_checkpoints
    argv = ["eval", "--crossplay", str(early), str(late), "--output", str(output), "--limit", str(GAMES)]
    argv += ["--max-new-tokens", "8", "--backend", "transformers"]
    assert main(argv) == 0
    return output


@pytest.mark.slow
def test_crossplay_writes_the_matrix_files(league_run):
    for name in ("crossplay.json", "crossplay.md", "crossplay.png", "crossplay_games.jsonl"):
        assert (league_run / name).stat().st_size > 0, name
    assert (league_run / "crossplay.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    markdown = (league_run / "crossplay.md").read_text()
    assert "**Progress**" in markdown and "**Cycling**" in markdown
    assert "| attacker \\ assessor | early | late |" in markdown


@pytest.mark.slow
def test_the_matrix_is_n_by_n_and_every_cell_counts_its_games(league_run):
    result = json.loads((league_run / "crossplay.json").read_text())
    assert [c["label"] for c in result["checkpoints"]] == ["early", "late"]
    assert result["checkpoints"][1]["resolved"].endswith("global_step_2/actor/huggingface")
    assert result["backend"] == "transformers" and result["judge"] == "rules" and result["decoding"] == "greedy"
    assert result["seeds"]["games_per_cell"] == GAMES == sum(result["seeds"]["categories"].values())
    for key in ("attacker_success_rate", "assessor_accuracy"):
        assert len(result[key]) == 2 and all(len(row) == 2 for row in result[key])
    assert len(result["cells"]) == 2
    for i, row in enumerate(result["cells"]):
        assert len(row) == 2
        for j, cell in enumerate(row):
            assert (cell["attacker"], cell["assessor"]) == (i, j)
            assert cell["games"] == GAMES == cell["decided"] + cell["ties"]
            assert cell["decided"] == cell["assessor_correct"] + cell["assessor_wrong"]
            adversarial = cell["attacker_successes"] + cell["attacker_failures"]
            assert cell["adversarial_games"] == adversarial + cell["adversarial_ties"]
            assert cell["adversarial_games"] == sum(
                n for c, n in result["seeds"]["categories"].items() if c.startswith("adversarial")
            )
            assert cell["attacker_success_rate"] == pytest.approx(cell["attacker_successes"] / max(adversarial, 1))
            assert cell["assessor_accuracy"] == pytest.approx(cell["assessor_correct"] / max(cell["decided"], 1))
            assert result["attacker_success_rate"][i][j] == cell["attacker_success_rate"]
            assert result["assessor_accuracy"][i][j] == cell["assessor_accuracy"]
    games = [json.loads(line) for line in (league_run / "crossplay_games.jsonl").read_text().splitlines()]
    assert Counter((g["attacker"], g["assessor"]) for g in games) == {(i, j): GAMES for i in (0, 1) for j in (0, 1)}
    assert [c["attacker"] for c in result["older_attacker_changes"]] == [0]


class Scripted:
    """A stand-in policy checkpoint: copies the note as attacker, always gives one verdict as assessor."""

    def __init__(self, name: str, verdict: Label) -> None:
        self.name = name
        self.verdict = verdict
        self.prompts_seen: list[str] = []

    def generate(self, prompts):
        out = []
        for messages in prompts:
            self.prompts_seen.append(json.dumps(messages))
            if prompt_role(messages) is Role.ATTACKER:
                note = messages[-1]["content"].split("Clinical note:\n", 1)[1]
                out.append(f"{self.name} rewrites </think> <answer>{note}</answer>")
            else:
                out.append(f"{self.name} reads </think> <answer>verdict: {self.verdict.name}</answer>")
        return out


def test_each_cell_pairs_the_rows_attacker_with_the_columns_assessor():
    seeds = load_league_seeds(None).head(12)
    policies = {"flagger": Scripted("flagger", Label.ERROR), "passer": Scripted("passer", Label.NO_ERROR)}
    checkpoints = [Checkpoint(name, name, name) for name in policies]
    loads: list[str] = []

    def load(model):
        loads.append(model)
        return policies[model]

    league = play_league(checkpoints, seeds, RulesJudge(), load)
    names = list(policies)
    for i, row in enumerate(league.cells):
        for j, cell in enumerate(row):
            assert len(cell.games) == 12
            for game in cell.games:
                assert game.turn(Role.ASSESSOR).response.startswith(names[j])
                attack = game.turn(Role.ATTACKER)
                assert attack is None or attack.response.startswith(names[i])
                assert game.outcome.verdict is policies[names[j]].verdict
    # greedy answers are replayed: no checkpoint sees a prompt twice, and each is loaded at most twice
    for policy in policies.values():
        assert len(policy.prompts_seen) == len(set(policy.prompts_seen))
    assert len(loads) <= 2 * len(policies) - 1 and league.model_loads == len(loads)
    accuracy = league.matrix("assessor_accuracy")
    assert accuracy[0][0] == accuracy[1][0] and accuracy[0][1] == accuracy[1][1]  # copies: the attacker changes nothing


def test_play_order_covers_the_full_matrix_once():
    for n in (2, 3, 5):
        order = play_order(n)
        assert sorted(order) == [(i, j) for i in range(n) for j in range(n)]


def test_default_seeds_are_the_val_split_convert_writes(tmp_path, capsys):
    assert main(["convert", "--output", str(tmp_path)]) == 0
    from_parquet = load_league_seeds(tmp_path / "val.parquet")
    default = load_league_seeds(None)
    assert [s.note_id for s in from_parquet.seeds] == [s.note_id for s in default.seeds]
    assert [s.category for s in from_parquet.seeds] == [s.category for s in default.seeds]
    assert len(default.seeds) > 0


def run_bad(capsys, *argv: str) -> str:
    assert main(["eval", *argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith("medplay eval: error: ") and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1
    return err


def test_missing_checkpoint_folder_is_named(capsys, tmp_path, tiny_model_dir):
    missing = tmp_path / "no-such-checkpoint"
    err = run_bad(capsys, "--crossplay", str(tiny_model_dir), str(missing), "--output", str(tmp_path / "o"))
    assert f"{missing}: field '--crossplay': no such file or folder" in err
    assert not (tmp_path / "o").exists()


def test_one_checkpoint_is_not_a_league(capsys, tmp_path, tiny_model_dir):
    err = run_bad(capsys, "--crossplay", str(tiny_model_dir), "--output", str(tmp_path / "o"))
    assert "field '--crossplay': a cross-play league needs at least 2 checkpoints, got 1" in err


def test_openai_judge_needs_its_address(capsys, tmp_path, tiny_model_dir):
    argv = ["--crossplay", str(tiny_model_dir), str(tiny_model_dir), "--output", str(tmp_path / "o"), "--judge", "openai"]
    err = run_bad(capsys, *argv)
    assert "field '--judge-url'" in err


def test_a_game_file_is_required_for_seeds(capsys, tmp_path, tiny_model_dir):
    assert main(["convert", "--output", str(tmp_path / "data")]) == 0
    capsys.readouterr()
    argv = ["--crossplay", str(tiny_model_dir), str(tiny_model_dir), "--output", str(tmp_path / "o")]
    err = run_bad(capsys, *argv, "--seeds", str(tmp_path / "data" / "benchmark.parquet"))
    assert "benchmark.parquet:row 1: field 'data_source'" in err


def test_model_and_crossplay_exclude_each_other(capsys, tmp_path, tiny_model_dir):
    with pytest.raises(SystemExit) as exit_info:
        main(["eval", "--model", str(tiny_model_dir), "--crossplay", str(tiny_model_dir), "--output", str(tmp_path)])
    assert exit_info.value.code == 2
    assert "not allowed with argument" in capsys.readouterr().err


def test_prompt_role_tells_the_game_prompts_apart():
    seed = load_league_seeds(None).seeds[0]
    assert prompt_role(assessor_messages(seed.text)) is Role.ASSESSOR
    adversarial = next(s for s in load_league_seeds(None).seeds if s.category.adversarial)
    assert prompt_role(attacker_messages(adversarial)) is Role.ATTACKER
    assert prompt_role(first_turn_messages(adversarial)) is Role.ATTACKER
    with pytest.raises(ValueError, match="not a game prompt"):
        prompt_role([{"role": "user", "content": "hello"}])
