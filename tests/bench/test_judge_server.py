"""`medplay bench judge-server` (medical_team/bench/judge_server.py) at a small size, so that `make bench-judge-server`
cannot break unseen: its JSON has every part, every verdict came back once to its game and every 429 was retried (its
speed and memory are not judged)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from medical_team.bench.commands import medplay_here
from medical_team.bench.judge_drive import slope

pytestmark = [pytest.mark.slow, pytest.mark.long]

def test_the_benchmark_runs_every_part_and_checks_every_verdict(tmp_path: Path) -> None:
    output = tmp_path / "bench.json"
    small = ["--calls", "400", "--warmup-calls", "100", "--sample-s", "0.5", "--sweep", "1,4", "--sweep-calls", "50",
             "--bursts", "3", "--model-sweep", "1,2", "--model-warmup", "2", "--model-calls", "3", "--model-bursts", "1"]  # fmt: skip
    done = subprocess.run(medplay_here("bench", "judge-server", "--output", str(output), *small),
                          capture_output=True, text=True, timeout=900, check=False)  # fmt: skip
    # 1: a target missed (the RSS slope of 400 calls means little)
    assert done.returncode in (0, 1), done.stderr[-4000:]
    result = json.loads(output.read_text())
    assert result["checks"]["every_verdict_once_to_its_game"] and result["checks"]["every_429_retried"]
    assert result["checks"]["model_verdicts_from_the_model"]
    rules, model = result["rules"], result["model"]
    assert rules["ledger"]["games"] == 400 + 2 * 50 + 3 * 16 == rules["ledger"]["answered_once"]
    assert [point["in_flight"] for point in rules["sweep"]] == [1, 4] and rules["soak"]["calls"] == 400
    rss = rules["soak"]["rss"]
    after_warmup = [(calls, mib) for _, calls, mib in rss["series"] if calls >= rss["warmup_calls"]]
    # The 300 calls after warm-up can all end between two samples 0.5 s apart (seen on a fresh clone), leaving too
    # few samples for the bench's slope (`judge_drive.slope`), and then there is none.
    fits = slope(after_warmup) is not None
    assert rss["series"] and (rss["slope_mib_per_10000_calls"] is not None) == fits
    assert rules["bursts"]["calls"] == 3 * 16 and rules["server"]["exit_status"] == 0
    assert model["ledger"]["games"] == 2 + 2 * 3 + 16 == model["ledger"]["answered_once"]
    assert sum(model["model_verdicts"].values()) == model["ledger"]["games"]
