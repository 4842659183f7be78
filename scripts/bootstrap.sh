#!/usr/bin/env bash
# Installs twinsim's build and test dependencies from Debian's packages.
# Idempotent: installs only what is missing, and says nothing when all is there.
set -euo pipefail

PACKAGES=(
  build-essential cmake ninja-build pkg-config
  libeigen3-dev libboost-graph-dev libyaml-cpp-dev nlohmann-json3-dev libcli11-dev
  openmpi-bin libopenmpi-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  libopenblas-dev
  pybind11-dev python3-dev python3-pip
  clang-format  # scripts/check_format.sh (git clang-format)
)

# one dpkg-query for all of them (scripts/test.sh runs this twice: a second each time, not 2-20 s)
installed=" $({ dpkg-query -W -f='${Package} ${Status}\n' "${PACKAGES[@]}" 2>/dev/null || true; } |
              awk '$2 == "install" && $3 == "ok" && $4 == "installed" {printf "%s ", $1}') "
missing=()
for p in "${PACKAGES[@]}"; do
  if [[ "$installed" != *" $p "* ]]; then missing+=("$p"); fi
done

if [ ${#missing[@]} -gt 0 ]; then
  echo "bootstrap: installing ${missing[*]}" >&2
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq >/dev/null
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# Python packages for the twinsim package, its tests and notebooks (pip, into the
# system Python); skipped when each is found (found, not imported: importing pandas and
# matplotlib took 3-11 s of each run).
PY_PACKAGES=(pandas:pandas matplotlib:matplotlib nbclient:nbclient nbformat:nbformat
             ipykernel:ipykernel pytest:pytest scikit_build_core:scikit-build-core
             safetensors:safetensors)  # safetensors: the merged-checkpoint test reads with it
py_missing=()
absent=" $(python3 -c 'import importlib.util, sys
print(" ".join(m for m in sys.argv[1:] if importlib.util.find_spec(m) is None))' "${PY_PACKAGES[@]%%:*}") "
for entry in "${PY_PACKAGES[@]}"; do
  module="${entry%%:*}" package="${entry#*:}"
  if [[ "$absent" == *" $module "* ]]; then py_missing+=("${package}"); fi
done
if [ ${#py_missing[@]} -gt 0 ]; then
  echo "bootstrap: pip installing ${py_missing[*]}" >&2
  # Debian 12 marks its Python externally managed (PEP 668): these are leaf packages
  python3 -m pip install -q --disable-pip-version-check --root-user-action=ignore --break-system-packages \
    "${py_missing[@]}" >/dev/null
fi
