#!/usr/bin/env bash
#
# install-deps.sh: install the Debian packages Tessera needs to build, run and
# be tested. As root it runs apt-get directly; otherwise through sudo. Never
# prompts (DEBIAN_FRONTEND=noninteractive, -y), so it works in CI with no
# stdin. If every package is already installed and we are not root, it does
# nothing (no sudo password asked for nothing).
set -euo pipefail

PACKAGES=(meson ninja-build pkg-config gcc libfuse3-dev fuse3 libzmq3-dev liblmdb-dev
    libcmocka-dev attr iproute2 libinih-dev libsystemd-dev
    libmicrohttpd-dev libjansson-dev libcurl4-openssl-dev libsodium-dev perl scdoc
    bash-completion)

missing=()
for package in "${PACKAGES[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q 'install ok installed'; then
        missing+=("$package")
    fi
done

if [ "$(id -u)" = 0 ]; then
    as_root=()
elif [ "${#missing[@]}" = 0 ]; then
    echo "install-deps: all packages already installed"
    exit 0
elif command -v sudo >/dev/null; then
    as_root=(sudo)
else
    echo "install-deps: missing packages ${missing[*]}; run as root or install sudo" >&2
    exit 1
fi

export DEBIAN_FRONTEND=noninteractive
echo "install-deps: apt-get update && apt-get install -y ${PACKAGES[*]}"
if ! "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q ||
    ! "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
        "${PACKAGES[@]}"; then
    if [ "${#missing[@]}" = 0 ]; then
        echo "install-deps: apt-get failed, but every package is already installed; going on" >&2
    else
        echo "install-deps: apt-get failed and ${missing[*]} are missing" >&2
        exit 1
    fi
fi
