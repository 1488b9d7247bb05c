#!/usr/bin/env bash
# The GPU image's stack, read from docker/requirements-gpu.lock (the one place that pins it).
#   docker/stack.sh tag          -> the image tag, e.g. 0.1.0-verl0.9.1-torch2.11.0-vllm0.24.0-cu130-py3.12
#   docker/stack.sh build-args   -> --build-arg CUDA_IMAGE=... --build-arg PYTHON_VERSION=...
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
lock="${root}/docker/requirements-gpu.lock"

# image VAR: the value of a `# image: VAR=value` line.
image() { sed -n "s/^# image: $1=//p" "${lock}"; }
# pin NAME: the version of a `NAME==version` (or `NAME[extras]==version`) line.
pin() { sed -n "s/^$1\(\[[^]]*\]\)\{0,1\}==//p" "${lock}"; }

case "${1:-}" in
    tag)
        version="$(sed -n 's/^version = "\(.*\)"/\1/p' "${root}/pyproject.toml")"
        cuda="$(image CUDA_IMAGE | sed -n 's/.*:\([0-9]*\)\.\([0-9]*\).*/cu\1\2/p')"
        echo "${version}-verl$(pin verl)-torch$(pin torch)-vllm$(pin vllm)-${cuda}-py$(image PYTHON_VERSION)"
        ;;
    build-args)
        echo "--build-arg CUDA_IMAGE=$(image CUDA_IMAGE) --build-arg PYTHON_VERSION=$(image PYTHON_VERSION)"
        ;;
    *)
        echo "usage: $0 tag|build-args" >&2
        exit 2
        ;;
esac
