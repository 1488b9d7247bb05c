#!/usr/bin/env bash
# The CPU flavour's inputs that depend on the host; prints their build arguments (logs go to stderr):
#   docker/cpu-inputs.sh ENGINE...
# - the base: Debian bookworm from the registry when it is reachable, otherwise an image made from Debian's own
#   packages with debootstrap (needs root, the debootstrap package and a Debian mirror: DEBIAN_MIRROR);
# - torch's CPU wheel: copied into build/image-wheels (bound into the build, not kept in the image) from pip's
#   local wheel folders (find-links) when the host has it; otherwise pip takes it from TORCH_INDEX_URL.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
engine=("$@")
registry_image="${DEBIAN_REGISTRY_IMAGE:-docker.io/library/debian:bookworm}"
local_image="${DEBIAN_LOCAL_IMAGE:-localhost/medplay-debian:bookworm}"
mirror="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
say() { echo "cpu-inputs: $*" >&2; }

exists() { "${engine[@]}" image inspect "$1" > /dev/null 2>&1; }
if exists "${registry_image}"; then
    base="${registry_image}"
elif exists "${local_image}"; then
    base="${local_image}"
elif "${engine[@]}" pull "${registry_image}" >&2; then
    base="${registry_image}"
else
    say "the registry is not reachable: making ${local_image} from Debian's packages (${mirror})"
    rootfs="$(mktemp -d)"
    trap 'rm -rf "${rootfs}"' EXIT
    debootstrap --variant=minbase bookworm "${rootfs}" "${mirror}" >&2
    tar -C "${rootfs}" -c . | "${engine[@]}" import - "${local_image}" >&2
    base="${local_image}"
fi
say "base image: ${base}"
echo "--build-arg DEBIAN_IMAGE=${base}"

torch="$("${root}/docker/stack.sh" torch cpu)"
wheels="${root}/build/image-wheels"
rm -rf "${wheels}"
mkdir -p "${wheels}"
# pip's find-links: its configuration (e.g. /etc/pip.conf) and PIP_FIND_LINKS, each a space-separated list.
read -r -a folders <<< "$(pip config get global.find-links 2> /dev/null || true) ${PIP_FIND_LINKS:-}"
for folder in "${folders[@]}"; do
    folder="${folder#file://}"
    for wheel in "${folder}"/torch-"${torch}"+cpu-*.whl; do
        if [[ -f "${wheel}" ]]; then
            cp -l "${wheel}" "${wheels}/" 2> /dev/null || cp "${wheel}" "${wheels}/"
        fi
    done
done
if compgen -G "${wheels}/*.whl" > /dev/null; then
    say "torch's CPU wheel from this host: $(cd "${wheels}" && echo ./*.whl)"
    echo "--build-arg TORCH_INDEX_URL="
fi
