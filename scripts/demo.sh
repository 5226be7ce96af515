#!/usr/bin/env bash
#
# demo.sh: from a fresh checkout to a mounted Tessera in one command.
# Installs the Debian packages (scripts/install-deps.sh), configures and
# builds with meson/ninja, then starts a local cluster (one tessera-meta,
# four tessera-datanode, one mount) with `tessera up`.
#
#   ./scripts/demo.sh [MOUNTPOINT]        default /tmp/tessera
#
# The state directory (data, logs, pids) is tessera's default:
# $TESSERA_STATE, else $XDG_STATE_HOME/tessera, else ~/.local/state/tessera,
# so `build/tools/tessera status` and `build/tools/tessera down` need no
# flags afterwards. Running it again is harmless: `tessera up` leaves running
# daemons alone.
set -euo pipefail

cd "$(dirname "$0")/.."
mount_dir=${1:-/tmp/tessera}

./scripts/install-deps.sh
[ -f build/build.ninja ] || meson setup build
ninja -C build

build/tools/tessera up --nodes 4 --mount "$mount_dir"
echo
echo "Tessera is mounted at $mount_dir. Try:"
echo "  cp some-file $mount_dir/ && ls -l $mount_dir"
echo "  build/tools/tessera status"
echo "  build/tools/tessera down"
