"""The wheelhouse's resolution (network: the index's metadata): the project's and the sdist-only pins' wheels built
here, pip's resolution of the lock for the target, the walk from a flavour's roots, checked against the lock.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from packaging.markers import Marker
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from wheelhouse_plan import (
    BENCH_PINS,
    CPU_LOCK,
    CPU_ONLY_PINS,
    REPO,
    SDIST_ONLY,
    ladder_pins,
    left_out_reason,
    no_deps_pins,
    platform_args,
    target_environment,
)

from medical_team.run.stack import Pin, read_lock

# Lock pins published only as sdists that build without a compiler (a wheel is built here, once).
SDIST_BUILDS = {"antlr4-python3-runtime", "rouge-score"}


def pip_environment() -> dict[str, str]:
    """pip's environment without this machine's pip configuration: the wheels come from the index alone."""
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith("PIP_") or key in ("PIP_INDEX_URL", "PIP_CERT", "PIP_DEFAULT_TIMEOUT")
    }
    env["PIP_CONFIG_FILE"] = os.devnull
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    return env


def pip_version(python: str) -> str:
    """`pip X.Y` of that Python (what the manifest and the resolved list record)."""
    version = subprocess.run([python, "-m", "pip", "--version"], capture_output=True, text=True, check=True)
    return version.stdout.split(" from ")[0]


def run(command: list[str]) -> None:
    """Print and run a pip command in pip's own environment (`pip_environment`), failing on an error."""
    print("+", " ".join(map(str, command)), flush=True)
    subprocess.run(command, check=True, env=pip_environment())


def build_local_wheels(python: str, pins: list[Pin], built: Path) -> None:
    """Wheels pip cannot download: the project itself, and lock pins published only as sdists (pure Python)."""
    built.mkdir(parents=True, exist_ok=True)
    # setuptools puts what an earlier build left in build/lib into the wheel: a module since moved would ship too.
    for stale in (REPO / "build" / "lib", *REPO.glob("build/bdist.*")):
        shutil.rmtree(stale, ignore_errors=True)
    run([python, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(built), str(REPO)])
    sdists = [pin for pin in pins if pin.name in SDIST_BUILDS]
    if sdists:
        run(
            [
                python,
                "-m",
                "pip",
                "wheel",
                "-q",
                "--no-deps",
                "--no-binary",
                ":all:",
                "-w",
                str(built),
                *(pin.requirement for pin in sdists),
            ]
        )


def shared_constraints(path: Path) -> Path:
    """Write the CPU lock's pins but those docker/cpu-only-pins.txt names to `path`: pip constraints for the GPU stack."""
    cpu_only = {canonicalize_name(line.strip()) for line in CPU_ONLY_PINS.read_text().splitlines()
                if line.strip() and not line.startswith("#")}  # fmt: skip
    kept = [pin.requirement for pin in read_lock(CPU_LOCK).pins if canonicalize_name(pin.name) not in cpu_only]
    path.write_text("\n".join(kept) + "\n")
    return path


def resolve(python: str, image: dict[str, str], pins: list[Pin], built: Path, glibc: str, report: Path) -> dict:
    """pip's resolution of the whole lock (every flavour is a subset of it) plus the project, for the target."""
    project = next(built.glob("medical_team-*.whl"))
    requirements = [pin.requirement for pin in pins if pin.name not in SDIST_ONLY]
    with tempfile.TemporaryDirectory() as target:
        run(
            [
                python,
                "-m",
                "pip",
                "install",
                "-q",
                "--dry-run",
                "--ignore-installed",
                "--report",
                str(report),
                "--target",
                target,
                "--find-links",
                str(built),
                "--constraint",
                str(shared_constraints(report.with_name("cpu-lock-constraints.txt"))),
                *platform_args(image, glibc),
                *requirements,
                *BENCH_PINS,
                *(pin for pin in ladder_pins() if pin not in no_deps_pins()),
                f"medical_team @ {project.as_uri()}",
            ]
        )
        resolved = json.loads(report.read_text())
        if no_deps_pins():
            alone = report.with_name("pip-report-no-deps.json")
            run(
                [python, "-m", "pip", "install", "-q", "--dry-run", "--ignore-installed", "--no-deps", "--report",
                 str(alone), "--target", target, *platform_args(image, glibc), *no_deps_pins()]
            )  # fmt: skip
            for item in json.loads(alone.read_text())["install"]:
                item["no_deps"] = True
                resolved["install"].append(item)
    return resolved


def closure(report: dict, roots: list[str], flavour: str, environment: dict[str, str]) -> dict[str, dict]:
    """The resolved packages reachable from `roots`, never entering a package the flavour leaves out."""
    by_name = {canonicalize_name(item["metadata"]["name"]): item for item in report["install"]}
    extras: dict[str, set[str]] = {}
    queue = [Requirement(root) for root in roots]
    while queue:
        requirement = queue.pop()
        name = canonicalize_name(requirement.name)
        if left_out_reason(name, flavour) is not None:
            continue
        wanted = {canonicalize_name(extra) for extra in requirement.extras}
        if name in extras and wanted <= extras[name]:
            continue
        if name not in by_name:
            raise SystemExit(f"{name} is needed but pip did not resolve it")
        extras[name] = extras.get(name, set()) | wanted
        if by_name[name].get("no_deps"):
            continue  # installed without its dependencies (requirements/cpu-nodeps.in)
        for line in by_name[name]["metadata"].get("requires_dist") or []:
            dependency = Requirement(line)
            marker = dependency.marker or Marker("python_version > '0'")
            if any(marker.evaluate({**environment, "extra": extra}) for extra in ("", *extras[name])):
                queue.append(dependency)
    return {name: by_name[name] for name in sorted(extras)}


def check_against_lock(packages: dict[str, dict], plan_: dict) -> None:
    """Every carried lock pin resolved at its locked version; nothing the flavour leaves out slipped in."""
    versions = {name: item["metadata"]["version"] for name, item in packages.items()}
    problems = [
        f"{root['name']}: lock {root['version']}, resolved {versions.get(canonicalize_name(root['name']))}"
        for root in plan_["roots"]
        if versions.get(canonicalize_name(root["name"])) != root["version"]
    ]
    problems += [
        f"{name} is left out of {plan_['flavour']} but resolved into it"
        for name in versions
        if left_out_reason(name, plan_["flavour"]) is not None
    ]
    if problems:
        raise SystemExit("the wheelhouse disagrees with the lock:\n  " + "\n  ".join(problems))


def resolve_flavour(
    args: argparse.Namespace, image: dict[str, str], pins: list[Pin], plan_: dict
) -> tuple[dict, list[str], dict[str, dict], dict[str, str]]:
    """pip's report, the flavour's roots, its resolved packages (checked against the lock), the target's markers."""
    work = args.output / ".work"
    built = work / "built"
    shutil.rmtree(built, ignore_errors=True)
    build_local_wheels(args.python, pins, built)
    report = resolve(args.python, image, pins, built, args.glibc, work / "pip-report.json")
    environment = target_environment(image)
    requested = [
        f"{item['metadata']['name']}[{','.join(item.get('requested_extras') or [])}]"
        for item in report["install"]
        if item.get("requested")
    ]
    everything = closure(report, requested, "full", environment)
    unreached = {canonicalize_name(item["metadata"]["name"]) for item in report["install"]} - set(everything)
    if unreached:
        raise SystemExit(f"pip resolved packages this script's walk does not reach: {sorted(unreached)}")
    roots = [
        f"{root['name']}[{','.join(root['extras'])}]=={root['version']}"
        if root["extras"]
        else f"{root['name']}=={root['version']}"
        for root in plan_["roots"]
    ]
    roots += [*BENCH_PINS, *ladder_pins(), "medical_team"]
    packages = closure(report, roots, args.flavour, environment)
    check_against_lock(packages, plan_)
    return report, roots, packages, environment
