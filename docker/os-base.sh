#!/usr/bin/env bash
# A flavour's base image when no registry may be reachable; prints the image to build on (logs go to stderr):
#   docker/os-base.sh bookworm|noble ENGINE...
# The registry's image when the engine has it or can pull it; otherwise an image made from the distribution's
# own packages with debootstrap (root, the debootstrap package, the distribution's mirror), imported once as
# localhost/medplay-DISTRIBUTION:SUITE and kept for later builds.
#   bookworm: Debian 12 (the cpu flavour), DEBIAN_MIRROR (http://deb.debian.org/debian);
#   noble: Ubuntu 24.04 (the gpu flavour's PyPI route: Python 3.12), UBUNTU_MIRROR (http://archive.ubuntu.com/ubuntu),
#     components main and universe (tini), with noble-updates and noble-security.
set -euo pipefail

suite="${1:?usage: docker/os-base.sh bookworm|noble ENGINE...}"
shift
engine=("$@")
say() { echo "os-base: $*" >&2; }

script=""
case "${suite}" in
    bookworm)
        registry_image="${DEBIAN_REGISTRY_IMAGE:-docker.io/library/debian:bookworm}"
        local_image="${DEBIAN_LOCAL_IMAGE:-localhost/medplay-debian:bookworm}"
        mirror="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
        components=main
        ;;
    noble)
        registry_image="${UBUNTU_REGISTRY_IMAGE:-docker.io/library/ubuntu:24.04}"
        local_image="${UBUNTU_LOCAL_IMAGE:-localhost/medplay-ubuntu:noble}"
        mirror="${UBUNTU_MIRROR:-http://archive.ubuntu.com/ubuntu}"
        components=main,universe
        # Debian 12's debootstrap predates noble; every Ubuntu release since gutsy uses the same script.
        if [[ ! -e /usr/share/debootstrap/scripts/noble ]]; then
            script=/usr/share/debootstrap/scripts/gutsy
        fi
        ;;
    *)
        say "unknown suite '${suite}' (bookworm or noble)"
        exit 2
        ;;
esac

exists() { "${engine[@]}" image inspect "$1" > /dev/null 2>&1; }
if exists "${registry_image}"; then
    base="${registry_image}"
elif exists "${local_image}"; then
    base="${local_image}"
elif "${engine[@]}" pull "${registry_image}" >&2; then
    base="${registry_image}"
else
    say "the registry is not reachable: making ${local_image} from the distribution's packages (${mirror})"
    rootfs="$(mktemp -d)"
    trap 'rm -rf "${rootfs}"' EXIT
    options=(--variant=minbase "--components=${components}")
    # Without the distribution's keyring on this host (Debian ships no Ubuntu keyring) the Release file's
    # signature cannot be checked; debootstrap then says so and relies on the mirror's transport.
    keyring=/usr/share/keyrings/ubuntu-archive-keyring.gpg
    if [[ "${suite}" == noble && ! -f "${keyring}" ]]; then
        say "no ${keyring} on this host: the Release signature is not checked"
        options+=(--no-check-gpg)
    fi
    debootstrap "${options[@]}" "${suite}" "${rootfs}" "${mirror}" ${script:+"${script}"} >&2
    if [[ "${suite}" == noble ]]; then
        for pocket in noble noble-updates noble-security; do
            echo "deb ${mirror} ${pocket} ${components//,/ }"
        done > "${rootfs}/etc/apt/sources.list"
    fi
    tar -C "${rootfs}" -c . | "${engine[@]}" import - "${local_image}" >&2
    base="${local_image}"
fi
say "base image: ${base}"
echo "${base}"
