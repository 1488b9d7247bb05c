#!/usr/bin/env bash
# The container engine's command line on this host, with the options it needs (the Makefile's $(ENGINE)):
#   docker/engine.sh [docker|podman|PATH]   -> e.g. `docker`, or `podman --runtime runc`
# Without an argument: docker when its daemon answers, else podman when installed, else docker.
# podman also reads docker/podman-containers.conf through CONTAINERS_CONF (the Makefile exports it).
set -euo pipefail

engine="${1:-}"
if [[ -z "${engine}" ]]; then
    if docker info > /dev/null 2>&1; then
        engine=docker
    elif command -v podman > /dev/null; then
        engine=podman
    else
        engine=docker
    fi
fi

options=()
if [[ "$(basename "${engine}")" == podman ]]; then
    # crun, podman's default runtime where it is installed, refuses cgroup v1 and hybrid hosts; runc runs there.
    if [[ "$(stat -fc %T /sys/fs/cgroup)" != cgroup2fs ]] && command -v runc > /dev/null; then
        options+=(--runtime runc)
    fi
fi
echo "${engine}" "${options[@]}"
