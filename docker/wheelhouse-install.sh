#!/usr/bin/env bash
# install.sh of an offline wheelhouse built by scripts/wheelhouse.py (docs/wheelhouse.md): no index, no network.
#   ./install.sh --target DIR [--python PY]   # into a folder put first on PYTHONPATH (onto-torch: the host keeps its torch)
#   ./install.sh --venv DIR [--python PY]     # into a new venv (the full flavour: torch included)
#   ./install.sh --verify-only                # join split parts and check SHA256SUMS, install nothing
#   --no-compile: no .pyc files at install time (less CPU now, slower first imports)
# A split wheelhouse: put every part-NN folder side by side and run part-01/install.sh; chunks are joined first
# (into PARTS/assembled, or --work DIR). Then it checks every sha256, installs every wheel with --no-deps,
# runs pip check (problems of the wheelhouse's own packages fail; the host's other packages only warn) and
# imports verl, vllm and ray. It writes DIR/env.sh: `source DIR/env.sh` before running medplay.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
python=python3
target=""
venv=""
work=""
verify_only=0
compile=--compile

usage() { sed -n '2,6p' "$0" >&2; exit 2; }
while [[ $# -gt 0 ]]; do
    case "$1" in
        --target) target="$2"; shift 2 ;;
        --venv) venv="$2"; shift 2 ;;
        --python) python="$2"; shift 2 ;;
        --work) work="$2"; shift 2 ;;
        --verify-only) verify_only=1; shift ;;
        --no-compile) compile=--no-compile; shift ;;
        *) usage ;;
    esac
done
if [[ "${python}" == */* ]]; then  # a path: make it absolute (the import check runs from /)
    python="$(cd "$(dirname "${python}")" && pwd)/$(basename "${python}")"
fi
if [[ ${verify_only} -eq 0 && -z "${target}${venv}" ]] || [[ -n "${target}" && -n "${venv}" ]]; then
    usage
fi

# manifest KEY...: a value of manifest.json (python with no third-party imports).
manifest() {
    "${python}" - "${here}/manifest.json" "$@" <<'EOF'
import json, sys
manifest = json.load(open(sys.argv[1]))
key = sys.argv[2]
if key == "pin":
    print(next((p["version"] for p in manifest["left_out_pins"] + manifest["roots"] if p["name"] == sys.argv[3]), ""))
elif key == "run_env":
    print("".join(f"export {k}={v}\n" for k, v in manifest["run_env"].items()), end="")
else:
    print(manifest[key] if not isinstance(manifest[key], dict) else json.dumps(manifest[key]))
EOF
}

# 1. The wheels: here/wheels, or joined from the part-NN folders beside this one.
if [[ -d "${here}/wheels" ]]; then
    wheels="${here}/wheels"
else
    parts="$(dirname "${here}")"
    wheels="${work:-${parts}/assembled}"
    mkdir -p "${wheels}"
    while read -r _ file; do
        if [[ -f "${wheels}/${file}" ]]; then
            continue
        fi
        whole=("${parts}"/part-*/"${file}")
        if [[ -f "${whole[0]}" ]]; then
            ln -sf "${whole[0]}" "${wheels}/${file}"
            continue
        fi
        mapfile -t chunks < <(find "${parts}" -mindepth 2 -maxdepth 2 -path "${parts}/part-*/${file}.chunk-*" -printf '%f\t%p\n' \
            | sort | cut -f2)
        if [[ ${#chunks[@]} -eq 0 ]]; then
            echo "install.sh: ${file} is in no part folder under ${parts}: copy every part-NN folder there" >&2
            exit 1
        fi
        cat "${chunks[@]}" > "${wheels}/${file}.joining"
        mv "${wheels}/${file}.joining" "${wheels}/${file}"
    done < "${here}/SHA256SUMS"
fi
echo "install.sh: checking $(wc -l < "${here}/SHA256SUMS") wheels in ${wheels}"
(cd "${wheels}" && sha256sum --quiet --strict -c "${here}/SHA256SUMS")
if [[ ${verify_only} -eq 1 ]]; then
    echo "install.sh: every sha256 matches"
    exit 0
fi

# 2. The interpreter: the lock's Python; onto-torch needs the lock's torch already there.
flavour="$(manifest flavour)"
want_python="$("${python}" - "${here}/manifest.json" <<'EOF'
import json, sys
print(json.load(open(sys.argv[1]))["target"]["python"])
EOF
)"
have_python="$("${python}" -c 'import sys; print("%d.%d" % sys.version_info[:2])')"
if [[ "${have_python}" != "${want_python}" ]]; then
    echo "install.sh: ${python} is Python ${have_python}; this wheelhouse is for Python ${want_python}" >&2
    exit 1
fi
if [[ "${flavour}" == "onto-torch" && -n "${venv}" ]]; then
    echo "install.sh: onto-torch goes into a --target folder beside the host's torch; a new venv would not see it" >&2
    exit 2
fi
if [[ "${flavour}" == "onto-torch" ]]; then
    want_torch="$(manifest pin torch)"
    have_torch="$("${python}" -c 'import torch; print(torch.__version__, torch.version.cuda)' 2>/dev/null || true)"
    if [[ "${have_torch%%+*}" != "${want_torch}" && "${have_torch%% *}" != "${want_torch}" ]]; then
        echo "install.sh: the onto-torch wheelhouse needs torch ${want_torch} in ${python}; found: ${have_torch:-none}." >&2
        echo "install.sh: use the full flavour, or a Python that has torch ${want_torch} (CUDA 13.0 build)" >&2
        exit 1
    fi
    echo "install.sh: host torch ${have_torch} (CUDA version last)"
fi

# 3. Install every wheel without dependencies: the wheelhouse is the resolved set (plus the host's torch).
mapfile -t files < <(cut -d' ' -f3 "${here}/SHA256SUMS" | sed "s|^|${wheels}/|")
pip_install=(-m pip install --no-index --no-deps --disable-pip-version-check --no-warn-script-location -q "${compile}")
if [[ -n "${venv}" ]]; then
    "${python}" -m venv "${venv}"
    venv="$(cd "${venv}" && pwd)"
    python="${venv}/bin/python"
    "${python}" "${pip_install[@]}" "${files[@]}"
    env_file="${venv}/env.sh"
    { echo "source '${venv}/bin/activate'"; manifest run_env; } > "${env_file}"
    run=("${python}")
else
    mkdir -p "${target}"
    target="$(cd "${target}" && pwd)"
    # --upgrade: a second run replaces what an earlier one left (pip skips existing folders otherwise).
    "${python}" "${pip_install[@]}" --upgrade --target "${target}" "${files[@]}"
    env_file="${target}/env.sh"
    { echo "export PYTHONPATH='${target}'\${PYTHONPATH:+:\${PYTHONPATH}}"
      echo "export PATH='${target}/bin':\${PATH}"
      manifest run_env; } > "${env_file}"
    run=(env "PYTHONPATH=${target}${PYTHONPATH:+:${PYTHONPATH}}" "${python}")
fi
echo "install.sh: installed ${#files[@]} wheels; environment: source ${env_file}"

# 4. pip check: the wheelhouse's own packages must be consistent (a requirement on a package this flavour
#    leaves out on purpose is listed, not fatal); the host's other packages only warn.
"${run[@]}" -m pip check > "${here}/pip-check.txt" 2>&1 || true
"${python}" - "${here}/manifest.json" "${here}/pip-check.txt" <<'EOF'
import json, re, sys
manifest = json.load(open(sys.argv[1]))
norm = lambda name: re.sub(r"[-_.]+", "-", name).lower()
ours = {norm(wheel["name"]) for wheel in manifest["wheels"]}
left_out = {norm(p["name"]) for p in manifest["left_out"]} | {norm(p["name"]) for p in manifest["left_out_pins"]}
failures = 0
for line in open(sys.argv[2]).read().splitlines():
    if line.startswith("No broken requirements"):
        continue
    subject = norm(line.split(" ", 1)[0])
    missing = re.search(r" requires (\S+), which is not installed", line)
    if subject not in ours:
        print(f"install.sh: host package (not fatal): {line}")
    elif missing and norm(missing.group(1)) in left_out:
        print(f"install.sh: left out on purpose: {line}")
    else:
        print(f"install.sh: BROKEN: {line}")
        failures += 1
sys.exit(1 if failures else 0)
EOF

# 5. The stack imports from the installed wheels (from a neutral folder: a checkout in the current one would win).
# shellcheck disable=SC1090
(source "${env_file}"
 cd /
 "${run[@]}" - "${here}/manifest.json" <<'EOF'
import json, sys
import ray, torch, transformers, verl, vllm
import medical_team
expected = {w["name"].lower(): w["version"] for w in json.load(open(sys.argv[1]))["wheels"]}
for module in (torch, transformers, verl, vllm, ray):
    name, version = module.__name__, getattr(module, "__version__", "?")
    origin = module.__file__.rsplit("/site-packages/", 1)[0] if "site-packages" in module.__file__ else module.__file__
    local = version.split("+")[0]  # torch's +cu130
    assert name not in expected or expected[name] == local, f"{name} {version} imported, {expected[name]} installed"
    print(f"install.sh: import {name} {version}  ({origin})")
print(f"install.sh: import medical_team ({medical_team.__file__})")
EOF
)
echo "install.sh: done"
