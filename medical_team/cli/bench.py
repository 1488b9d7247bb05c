"""`medplay bench BENCH [options]`: the benchmarks of medical_team/bench/, one subcommand each.

    medplay bench --help              # the benchmarks
    medplay bench step --help         # one benchmark's options
    medplay bench step                # the self-play step beside verl's stock step; writes build/bench.json

A benchmark's module is imported only when a command line names it: `medplay bench --help` loads none of them (nor
numpy, torch or verl). docs/benchmarks.md says how to run them on a card and how to read what they write.
"""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Sequence
from typing import Any

# benchmark -> (its module, which defines `add_arguments(parser)` and `run(args) -> int`; its one-line help)
BENCHES: dict[str, tuple[str, str]] = {
    "step": ("medical_team.bench.step", "the self-play training step beside verl's stock single-turn GRPO step"),
    "scaling": ("medical_team.bench.scaling", "a step's cost against games per step and the response cap"),
    "startup": ("medical_team.bench.startup", "what a run's start costs, to verl's trainer ready and to step 1"),
    "step-variants": ("medical_team.bench.step_variants", "variants of one training step in alternating rounds"),
    "features": ("medical_team.bench.features", "verl's checkpoints, profiler and weight sync on cpu-smoke"),
    "soak": ("medical_team.bench.soak", "a long run, SIGKILLed and resumed, every process watched"),
    "eval": ("medical_team.bench.eval_speed", "`medplay eval` of a real small model, vLLM against transformers"),
    "data-path": ("medical_team.bench.data_path", "`medplay convert --notes` and `medplay predict` against size"),
    "convert": ("medical_team.bench.convert_speed", "`medplay convert` of the bundled MEDEC files"),
    "game": ("medical_team.bench.game_settle", "games settled per second on one CPU core"),
    "judge-server": ("medical_team.bench.judge_server", "the judge server under load, a real process and client"),
}


class BenchParser(argparse.ArgumentParser):
    """A benchmark's parser: its module adds its options when a command line names it, not before."""

    def __init__(self, *args: Any, module: str, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.module = module
        self.loaded = False

    def parse_known_args(
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        """Load the benchmark's options, then parse as argparse does."""
        if not self.loaded:
            bench = importlib.import_module(self.module)
            bench.add_arguments(self)
            self.set_defaults(run=bench.run)
            self.loaded = True
        return super().parse_known_args(args, namespace)


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    """Register `medplay bench` and one subcommand per benchmark."""
    parser = subparsers.add_parser(
        "bench",
        help="measure the training step, its start, the data path, eval and the judge server",
        description="Benchmarks: each writes its JSON (PNG and Markdown where it draws) naming the device, date, "
        "commit and versions, and prints a short table. `medplay bench BENCH --help` for one's options.",
    )
    benches = parser.add_subparsers(dest="bench", required=True, metavar="BENCH", parser_class=BenchParser)
    for name, (module, help_text) in BENCHES.items():
        benches.add_parser(name, help=help_text, module=module)
