#!/usr/bin/env bash
# The CPU flavour's inputs that depend on the host; prints their build arguments (logs go to stderr):
#   docker/cpu-inputs.sh ENGINE...
# - the base: Debian bookworm from the registry when it is reachable, otherwise an image made from Debian's own
#   packages with debootstrap (docker/os-base.sh: root, the debootstrap package, a Debian mirror: DEBIAN_MIRROR);
# - torch's CPU wheel: copied into build/image-wheels (bound into the build, not kept in the image) from pip's
#   local wheel folders (find-links) when the host has it; otherwise pip takes it from TORCH_INDEX_URL.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
engine=("$@")
say() { echo "cpu-inputs: $*" >&2; }

# The base: the registry's Debian, or one made with debootstrap (docker/os-base.sh).
base="$("${root}/docker/os-base.sh" bookworm "${engine[@]}")"
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
