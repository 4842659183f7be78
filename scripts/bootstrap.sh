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

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
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
# system Python); skipped when each is importable.
PY_PACKAGES=(pandas:pandas matplotlib:matplotlib nbclient:nbclient nbformat:nbformat
             ipykernel:ipykernel pytest:pytest scikit_build_core:scikit-build-core
             safetensors:safetensors)  # safetensors: the merged-checkpoint test reads with it
py_missing=()
for entry in "${PY_PACKAGES[@]}"; do
  module="${entry%%:*}" package="${entry#*:}"
  python3 -c "import ${module}" 2>/dev/null || py_missing+=("${package}")
done
if [ ${#py_missing[@]} -gt 0 ]; then
  echo "bootstrap: pip installing ${py_missing[*]}" >&2
  # Debian 12 marks its Python externally managed (PEP 668): these are leaf packages
  python3 -m pip install -q --disable-pip-version-check --root-user-action=ignore --break-system-packages \
    "${py_missing[@]}" >/dev/null
fi
