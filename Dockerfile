# medplay GPU appliance: verl 0.9.1's own GPU stack; every version comes from docker/requirements-gpu.lock.
# Build: make build   (passes the lock's base image and Python as build arguments, tags the image with the stack)
# Run:   docker run --gpus all --ipc=host -v "$PWD/checkpoints:/checkpoints" medplay:latest train profile=80g
ARG CUDA_IMAGE=nvidia/cuda:13.0.2-devel-ubuntu24.04
FROM ${CUDA_IMAGE}

ARG PYTHON_VERSION=3.12
# The non-root user; `make build` sets these to the host user's ids so volume files stay theirs.
ARG MEDPLAY_UID=1000
ARG MEDPLAY_GID=1000
# flash-attn compiles from source: parallel jobs (each takes several GiB of RAM) and target GPU architectures.
ARG MAX_JOBS=4
ARG FLASH_ATTN_CUDA_ARCHS="80;90;100;120"
# The stack tag `make build` gives the image; recorded in the image for `medplay version` and run records.
ARG IMAGE_TAG=medplay:dev

SHELL ["/bin/bash", "-o", "pipefail", "-c"]
ENV DEBIAN_FRONTEND=noninteractive \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    VIRTUAL_ENV=/opt/venv \
    PATH=/opt/venv/bin:${PATH}

# Ubuntu's own package versions move with security updates; the Python stack is what is pinned.
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends \
        "python${PYTHON_VERSION}" "python${PYTHON_VERSION}-venv" "python${PYTHON_VERSION}-dev" \
        tini git ca-certificates procps \
    && rm -rf /var/lib/apt/lists/* \
    && "python${PYTHON_VERSION}" -m venv /opt/venv

WORKDIR /opt/medplay
COPY docker/requirements-gpu.lock docker/requirements-gpu.lock
# Everything but flash-attn first: flash-attn's build needs the installed torch (no build isolation).
# Later installs use the lock as constraints, which pip accepts only without extras (`verl[verl-core]`).
RUN grep -v '^flash-attn==' docker/requirements-gpu.lock > /tmp/stack.txt \
    && pip install -r /tmp/stack.txt \
    && rm /tmp/stack.txt \
    && sed 's/\[[^]]*\]==/==/' docker/requirements-gpu.lock > docker/constraints-gpu.txt
RUN MAX_JOBS="${MAX_JOBS}" FLASH_ATTN_CUDA_ARCHS="${FLASH_ATTN_CUDA_ARCHS}" \
    pip install --no-build-isolation -c docker/constraints-gpu.txt "flash-attn"

# The project (with the bundled MEDEC-MS CSVs as package data), against the same pins.
COPY pyproject.toml README.md ./src/
COPY configs ./src/configs
COPY medical_team ./src/medical_team
RUN pip install -c docker/constraints-gpu.txt ./src \
    && pip check \
    && pip freeze > image-freeze.txt

COPY docker/supervisord.conf docker/pipeline_events.py docker/supervise.py docker/
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
