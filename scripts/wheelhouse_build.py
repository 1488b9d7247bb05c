"""The wheelhouse's build (network): a flavour's resolved wheels downloaded and checked into OUTPUT/FLAVOUR with
install.sh, SHA256SUMS, requirements.txt and manifest.json; or, with --resolved, only its resolved set written.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import hashlib
import json
import shutil
import time
import urllib.request
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from wheelhouse_plan import BENCH_PINS, INSTALLER, MIB, SDIST_ONLY, left_out_reason, no_deps_pins
from wheelhouse_resolve import closure, pip_version, resolve_flavour

from medical_team.run.stack import Pin, read_lock


def host_has(packages: dict[str, dict], freeze: Path) -> dict[str, str]:
    """The resolved packages a host's `pip freeze` lists at exactly the resolved version (name -> version)."""
    host = read_lock(freeze, skip_unpinned=True).versions()
    return {
        name: item["metadata"]["version"]
        for name, item in packages.items()
        if host.get(name) == item["metadata"]["version"] and name != "medical-team"
    }


def sha256_of(path: Path) -> str:
    """The file's sha256, read a MiB at a time."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(MIB):
            digest.update(chunk)
    return digest.hexdigest()


def fetch(item: dict, wheels: Path) -> Path:
    """Download one resolved wheel (or copy a locally built one) and check its sha256 against pip's report."""
    info = item["download_info"]
    url = info["url"]
    path = wheels / urllib.request.url2pathname(url.rsplit("/", 1)[-1])
    expected = info.get("archive_info", {}).get("hashes", {}).get("sha256")
    if path.is_file() and (expected is None or sha256_of(path) == expected):
        return path
    partial = path.with_suffix(".partial")
    # The same file in another flavour's wheels/ (beside this one) is copied instead of downloaded again.
    sibling = next((other for other in wheels.parent.parent.glob(f"*/wheels/{path.name}") if other != path), None)
    if url.startswith("file:"):
        shutil.copyfile(urllib.request.url2pathname(url.removeprefix("file://")), partial)
    elif sibling is not None and expected is not None and sha256_of(sibling) == expected:
        shutil.copyfile(sibling, partial)
    else:
        with urllib.request.urlopen(url, timeout=300) as response, partial.open("wb") as handle:
            shutil.copyfileobj(response, handle, MIB)
    if expected is not None and sha256_of(partial) != expected:
        raise SystemExit(f"{url}: sha256 differs from pip's report")
    partial.rename(path)
    return path


RESOLVED_HEADER = """\
# The GPU image's stack as pip resolves it: docker/requirements-gpu.lock (which pins only the top) with every
# package it pulls in, for Linux x86_64 and CPython {python}: scripts/wheelhouse.py's `{flavour}` flavour, the wheels
# the gpu-pypi image installs (the cuda image resolves the same lock at build time, plus flash-attn {flash_attn},
# built from source). Not installed from: generated, read by tests/test_stack_table.py for docs/stack.md.
# Regenerate after changing the lock (network: the index's metadata only, no wheel is downloaded):
#   make gpu-resolved
# lock_sha256: {lock_sha256}
# resolved: {date} with {pip}, manylinux up to glibc {glibc}
"""


def write_resolved(args: argparse.Namespace, image: dict[str, str], pins: list[Pin], plan_: dict) -> int:
    """--resolved FILE: the flavour's resolved set as `name==version` lines (the project itself left out)."""
    _, _, packages, _ = resolve_flavour(args, image, pins, plan_)
    header = RESOLVED_HEADER.format(
        python=image["PYTHON_VERSION"],
        flavour=args.flavour,
        flash_attn=next((pin.version for pin in pins if pin.name in SDIST_ONLY), "-"),
        lock_sha256=plan_["lock_sha256"],
        date=time.strftime("%Y-%m-%d", time.gmtime()),
        pip=pip_version(args.python),
        glibc=args.glibc,
    )
    lines = sorted(
        f"{item['metadata']['name']}=={item['metadata']['version']}\n"
        for name, item in packages.items()
        if name != "medical-team"
    )
    args.resolved.write_text(header + "".join(lines))
    print(f"{args.resolved}: {len(lines)} packages resolved for the {args.flavour} flavour")
    return 0


def build(args: argparse.Namespace, image: dict[str, str], pins: list[Pin], plan_: dict) -> dict:
    """Resolve, download, check and describe the flavour's wheels into OUTPUT/FLAVOUR."""
    started = time.monotonic()
    house = args.output / args.flavour
    report, roots, packages, environment = resolve_flavour(args, image, pins, plan_)
    on_host = host_has(packages, args.host_freeze) if args.host_freeze else {}
    packages = {name: item for name, item in packages.items() if name not in on_host}
    wheels = house / "wheels"
    wheels.mkdir(parents=True, exist_ok=True)
    with concurrent.futures.ThreadPoolExecutor(max_workers=4) as pool:
        paths = dict(zip(packages, pool.map(lambda item: fetch(item, wheels), packages.values()), strict=True))
    for stale in set(wheels.iterdir()) - set(paths.values()):
        stale.unlink()
    no_deps_names = {canonicalize_name(Requirement(pin).name) for pin in [*BENCH_PINS, *no_deps_pins()]}
    entries = []
    for name, path in paths.items():
        item = packages[name]
        entries.append(
            {
                "name": item["metadata"]["name"],
                "version": item["metadata"]["version"],
                "file": path.name,
                "bytes": path.stat().st_size,
                "sha256": sha256_of(path),
                "install": "no-deps" if name in no_deps_names else "stack",
            }
        )
    left_out = sorted(
        {
            (item["metadata"]["name"], item["metadata"]["version"])
            for name, item in closure(report, roots, "full", environment).items()
            if name not in packages
        }
    )
    manifest = {
        **plan_,
        "glibc": args.glibc,
        "resolved_with": pip_version(args.python),
        "wheels": entries,
        "left_out": [
            {"name": name, "version": version, "reason": left_out_reason(name, args.flavour)}
            for name, version in left_out
        ],
        "on_host": [{"name": name, "version": version} for name, version in sorted(on_host.items())],
        "totals": {
            "wheels": len(entries),
            "bytes": sum(e["bytes"] for e in entries),
            "mib": round(sum(e["bytes"] for e in entries) / MIB, 1),
            "build_seconds": round(time.monotonic() - started, 1),
        },
    }
    (house / "SHA256SUMS").write_text("".join(f"{e['sha256']}  {e['file']}\n" for e in entries))
    (house / "requirements.txt").write_text("".join(f"{e['name']}=={e['version']}\n" for e in entries))
    shutil.copy2(INSTALLER, house / "install.sh")
    (house / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
    return manifest
