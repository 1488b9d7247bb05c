"""The offline wheelhouse: docker/requirements-gpu.lock's stack as wheels for Linux x86_64, CPython 3.12, CUDA 13.0.

Two flavours: `full` (everything, torch and the NVIDIA libraries included) and `onto-torch` (for a host that
already has the lock's torch built for CUDA 13.0: torch, torchvision, torchaudio, triton, the NVIDIA/CUDA
libraries and the optional GPU kernels listed in LEFT_OUT, scripts/wheelhouse_plan.py, are not carried). Each build
writes, under OUTPUT/FLAVOUR/: wheels/, install.sh (docker/wheelhouse-install.sh), SHA256SUMS, requirements.txt and
manifest.json (every wheel with its size and sha256, what was left out and why); with --split-mib N also
OUTPUT/FLAVOUR-parts/part-01, part-02, ... (each at most N MiB; bigger wheels travel as byte chunks).

Run:  make wheelhouse FLAVOUR=onto-torch SPLIT_MIB=56
      .venv/bin/python scripts/wheelhouse.py --flavour onto-torch --output build/wheelhouse [--split-mib 56]
      .venv/bin/python scripts/wheelhouse.py --flavour full --output build/wheelhouse --dry   # no network
      .venv/bin/python scripts/wheelhouse.py --flavour full --resolved docker/requirements-gpu.resolved.txt
`--resolved FILE` resolves only (the index's metadata, no wheel downloaded) and writes the flavour's resolved
set to FILE: for `full`, the GPU image's versions that docs/stack.md compares with the CPU environment.
`--dry` writes only the manifest's plan (which lock pins the flavour carries, which it leaves out); the
real build resolves with pip (`--python`, a CPython of the lock's version), downloads and checks every wheel.
Details: docs/wheelhouse.md. The pieces, beside this command line: scripts/wheelhouse_plan.py (what each flavour
carries, the dry plan), scripts/wheelhouse_resolve.py (pip's resolution), scripts/wheelhouse_build.py (the
download, the manifest, --resolved) and scripts/wheelhouse_parts.py (--split-mib).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

from wheelhouse_build import build, write_resolved
from wheelhouse_parts import write_parts
from wheelhouse_plan import FLAVOURS, LOCK, REPO, plan

from medical_team.common.errors import UserInputError
from medical_team.run.stack import read_lock


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """The flavour, where to write and what to do: a dry plan, a resolution only or the whole build."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--flavour", choices=FLAVOURS, required=True)
    parser.add_argument("--output", type=Path, default=REPO / "build" / "wheelhouse")
    parser.add_argument("--dry", action="store_true", help="write the plan only (no network, no download)")
    parser.add_argument("--split-mib", type=int, help="also lay the wheels out in parts of at most N MiB")
    parser.add_argument("--python", default="python3.12", help="a CPython of the lock's version with pip >= 23")
    parser.add_argument(
        "--host-freeze",
        type=Path,
        help="`pip freeze` of the target host: wheels it already has at exactly the resolved version are not carried",
    )
    parser.add_argument(
        "--resolved",
        type=Path,
        help="resolve only (no wheel downloaded) and write the flavour's resolved set to this file",
    )
    parser.add_argument("--glibc", default="2.35", help="newest manylinux glibc the target has (Ubuntu 22.04: 2.35)")
    args = parser.parse_args(argv)
    args.output = args.output.resolve()
    args.resolved = args.resolved.resolve() if args.resolved else None
    if args.split_mib is not None and args.split_mib < 2:
        parser.error("--split-mib must be at least 2")
    return args


def main(argv: list[str] | None = None) -> int:
    """Write the flavour's dry plan, its resolved set or its wheelhouse (and parts); 2 on a bad lock or Python."""
    args = parse_args(argv)
    try:
        lock = read_lock(LOCK)
    except UserInputError as error:
        print(f"wheelhouse: {error}", file=sys.stderr)
        return 2
    image, pins = lock.image, list(lock.pins)
    plan_ = plan(args.flavour, image, pins)
    if args.dry:
        house = args.output / args.flavour
        house.mkdir(parents=True, exist_ok=True)
        (house / "manifest.json").write_text(json.dumps({**plan_, "dry": True}, indent=1) + "\n")
        print(
            f"{house / 'manifest.json'}: {len(plan_['roots'])} lock pins carried, "
            f"{len(plan_['left_out_pins'])} left out (dry: nothing resolved or downloaded)"
        )
        return 0
    version = subprocess.run(
        [args.python, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    if version != image["PYTHON_VERSION"]:
        print(
            f"--python {args.python} is Python {version}; pip must run on {image['PYTHON_VERSION']} "
            "(the lock's) so that environment markers resolve for the target",
            file=sys.stderr,
        )
        return 2
    if args.resolved:
        return write_resolved(args, image, pins, plan_)
    manifest = build(args, image, pins, plan_)
    totals = manifest["totals"]
    print(
        f"{args.output / args.flavour}: {totals['wheels']} wheels, {totals['mib']} MiB, "
        f"{len(manifest['left_out'])} resolved packages left out, {totals['build_seconds']} s"
    )
    if args.split_mib:
        parts = write_parts(args.output / args.flavour, manifest, args.split_mib)
        print(f"{parts}: {manifest['parts']['count']} parts of at most {args.split_mib} MiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
